"""Mechanisms behind leaks of public fix commits that the checks missed, each beside its twin that must stay
quiet: what a class backpropagates through an object it holds carries graph in its other methods too."""

from __future__ import annotations

from textwrap import dedent

from vramlens.lint import lint_source
from vramlens.lint.engine.chunks import ChunkCache

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
    return [(f.code, f.line - HEADER.count("\n")) for f in lint_source(source, preview=True)]


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


# --- the line to change when a dict is kept: where its graph went in ------------------------------------------

METRICS = """
model = nn.Linear(4, 4)
history = []


def loss_and_metrics(x):
    loss = model(x).pow(2).mean()
    metrics = {"mse": loss.detach()}
    metrics["scaled"] = {use}
    return loss, metrics


def train(loader, opt):
    for x in loader:
        loss, metrics = loss_and_metrics(x)
        loss.backward()
        opt.step()
        history.append(metrics)
"""


def test_a_kept_dict_is_reported_where_a_graph_carrying_tensor_went_into_it():
    """trl's metrics dict: ``metrics["nll_loss"] = nll.cpu().mean()`` in one function, the dict appended to a
    long-lived list in another. The fix goes where the tensor goes in; the append has nothing to detach."""
    findings = lint_source(HEADER + dedent(METRICS.replace("{use}", "loss.cpu() * 2")).lstrip("\n"), preview=True)
    assert [(f.code, f.line - HEADER.count("\n")) for f in findings] == [("VL102", 8)]
    assert "`loss.cpu() * 2` carries autograd history into `metrics`" in findings[0].message
    assert "history" in findings[0].message


def test_a_dict_with_several_graph_carrying_values_is_one_finding_naming_them_all():
    """One kept dict, one leak: reported once, on the first place, naming the others."""
    text = METRICS.replace("{use}", "loss.cpu() * 2").replace('"mse": loss.detach()', '"mse": loss, "rmse": loss.sqrt()')
    findings = lint_source(HEADER + dedent(text).lstrip("\n"), preview=True)
    assert [(f.code, f.line - HEADER.count("\n")) for f in findings] == [("VL102", 7)]
    assert "`loss` (with `loss.sqrt()`, `loss.cpu() * 2`) carry autograd history into `metrics`" in findings[0].message


def test_a_dict_of_detached_values_is_not_reported():
    assert _codes(METRICS.replace("{use}", "loss.item() * 2")) == []


def test_a_dict_whose_loss_the_framework_backpropagates_is_reported_where_it_is_kept():
    """A training step's returned log dict: its loss needs the graph, so the line to change is the append."""
    text = """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 4)
        self.outputs = []

    def training_step(self, batch, batch_idx):
        loss = self.net(batch).mean()
        log = {"loss": loss}
        self.outputs.append(log)
        return log
"""
    assert _codes(text) == [("VL102", 10)]


def test_a_lint_by_parts_places_the_finding_in_the_part_it_is_in():
    """The editor analyses a file by parts with positions of their own: the finding sits in the function where
    the tensor goes in, also after an edit between the two functions."""
    text = HEADER + dedent(METRICS.replace("{use}", "loss.cpu() * 2")).lstrip("\n")
    cache = ChunkCache()
    assert lint_source(text, cache=cache, preview=True) == lint_source(text, preview=True)
    edited = text.replace("\n\ndef train", "\n\nSCALE = 2\n\n\ndef train")
    assert [f.line for f in lint_source(edited, cache=cache, preview=True)] == [f.line for f in lint_source(edited, preview=True)] == [10]
    above = edited.replace("history = []\n", "history = []\nEPS = 1e-8\n")
    assert [f.line for f in lint_source(above, cache=cache, preview=True)] == [f.line for f in lint_source(above, preview=True)] == [11]


# --- running statistics written into a module's buffer in place -----------------------------------------------

BATCH_NORM = """
class RunningNorm(nn.Module):
    def __init__(self, channels, momentum=0.1):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.register_buffer("stored_mean", torch.zeros(channels))
        self.register_buffer("stored_var", torch.ones(channels))
        self.momentum = momentum

    def forward(self, x):
        mean, var = x.mean(0), x.var(0)
        if self.training:
            {mean_update}
            {var_update}
        return (x - mean) / (var + 1e-5).sqrt() * self.weight
"""


def _norm(mean_update: str, var_update: str) -> str:
    return BATCH_NORM.replace("{mean_update}", mean_update).replace("{var_update}", var_update)


def test_a_running_average_written_into_a_buffer_in_place_keeps_every_steps_graph():
    """synsin's batch norm: ``self.stored_mean[:] = self.stored_mean * (1 - m) + mean * m`` in forward makes the
    buffer part of this step's graph, and through its old value of every earlier step's."""
    text = _norm("self.stored_mean[:] = self.stored_mean * (1 - self.momentum) + mean * self.momentum",
                 "self.stored_var.copy_(self.stored_var * (1 - self.momentum) + var * self.momentum)")
    assert _codes(text) == [("VL101", 12), ("VL101", 13)]


def test_detached_or_plain_overwrites_of_a_buffer_are_not_running_averages():
    text = _norm("self.stored_mean[:] = self.stored_mean * (1 - self.momentum) + mean.detach() * self.momentum",
                 "self.stored_var[:] = var")
    assert _codes(text) == []


# --- a loop through a progress bar walks data -----------------------------------------------------------------

EMBEDDER = """
class Embedder:
    def __init__(self, model: nn.Module):
        self.model = model

    def get_image_embeddings(self, images):
        found = []
        for batch in {iterable}:
            found.append(self.model(batch).cpu())
        return torch.cat(found)
"""


def test_outputs_kept_over_a_loop_through_a_progress_bar_are_reported():
    """mteb's e5-v embedder: ``for batch in tqdm(images)`` walks a whole dataset, so the list keeps every batch's
    graph; a loop over a parameter of no telling name may be a handful of items."""
    assert _codes(EMBEDDER.replace("{iterable}", "tqdm(images)")) == [("VL102", 8)]
    assert _codes(EMBEDDER.replace("{iterable}", "enumerate(tqdm(images, desc='embed'))")) == [("VL102", 8)]
    assert _codes(EMBEDDER.replace("{iterable}", "images")) == []


# --- lists made in one tuple assignment --------------------------------------------------------------------------

HISTORY = """
class Trainer:
    def __init__(self, model: nn.Module, opt):
        self.model, self.opt = model, opt
        {made}

    def fit(self, loader):
        for batch in loader:
            loss = self.model(batch).mean()
            loss.backward()
            self.opt.step()
            self.losses.append(loss)
"""


def test_lists_bound_in_one_tuple_assignment_are_lists():
    """``self.steps, self.losses = [], []`` makes two lists: appending graph-carrying losses to one is VL102."""
    assert _codes(HISTORY.replace("{made}", "self.steps, self.losses = [], []")) == [("VL102", 11)]


def test_what_a_call_unpacks_into_stays_unknown():
    """``self.steps, self.losses = make_buffers()`` may hold anything: its ``append`` is not proven a list's."""
    assert _codes(HISTORY.replace("{made}", "self.steps, self.losses = make_buffers()")) == []
