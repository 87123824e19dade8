"""Mechanisms behind leaks of public fix commits that the checks missed, each beside its twin that must stay
quiet: what a class backpropagates through an object it holds carries graph in its other methods too."""

from __future__ import annotations

from textwrap import dedent

from vramlens.lint import lint_source

HEADER = """\
import torch
import torch.nn as nn
"""

TRAINER = """
class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt
        self.history = []

    def train_epoch(self, batches):
        for batch in batches:
            _, loss = self.model.get_labels_and_loss(batch)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()

    def evaluate(self, batches):
        eval_loss = 0
        for batch in batches:
            labels, loss = self.model.get_labels_and_loss(batch)
            {use}
        return eval_loss
"""


def _codes(body: str) -> list[tuple[str, int]]:
    source = HEADER + dedent(body).lstrip("\n")
    return [(f.code, f.line - HEADER.count("\n")) for f in lint_source(source)]


def test_a_loss_the_class_backpropagates_through_its_model_carries_graph_in_another_method():
    """flair's trainer: ``self.model.get_labels_and_loss`` gives the loss its training loop backpropagates, so the
    same call in ``evaluate`` gives a loss with its graph, and summing it keeps every batch's graph."""
    assert _codes(TRAINER.format(use="eval_loss += loss")) == [("VL101", 17)]


def test_the_other_results_of_that_call_stay_unknown():
    """Only the position the backward reads is proven: the labels beside the loss may be anything."""
    assert _codes(TRAINER.format(use="self.history.append(labels)")) == []


def test_a_method_of_the_held_object_nothing_backpropagates_stays_unknown():
    text = TRAINER.format(use="eval_loss += loss").replace(
        "_, loss = self.model.get_labels_and_loss(batch)", "_, loss = self.model.training_loss(batch)")
    assert _codes(text) == []
