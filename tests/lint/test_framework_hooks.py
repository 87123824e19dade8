"""Framework knowledge as data (library.PER_BATCH_HOOKS): outputs of a per-batch hook kept on ``self``."""

from __future__ import annotations

from textwrap import dedent

import pytest

from vramlens.lint import lint_source
from vramlens.lint.facts.library import PER_BATCH_HOOKS

LIGHTNING = """\
import torch
import torch.nn as nn
import lightning as L

class Lit(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 4)
        self.val_outputs = []

    def forward(self, x):
        return self.net(x)

    def {hook}(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        {keep}
"""


@pytest.mark.parametrize("hook, keep, flagged", [
    ("validation_step", "self.val_outputs.append(logits)", True),  # the epoch's logits stay on the GPU
    ("test_step", "self.val_outputs.append(logits[:, 0])", True),
    ("validation_step", "self.val_outputs.append(logits.detach().cpu())", False),
    ("validation_step", "self.val_outputs.append(logits.argmax(1).tolist())", False),
    ("validation_step", "self.val_outputs.append(logits)\n        self.val_outputs.clear()", False),
    ("validation_step", "self.other.append(logits)", False),  # not known to be a list
    ("on_something", "self.val_outputs.append(logits)", False),  # not a per-batch hook of the table
])
def test_outputs_kept_across_a_no_grad_hooks_batches(hook, keep, flagged):
    source = LIGHTNING.format(hook=hook, keep=keep)
    found = [f for f in lint_source(source, preview=True) if f.code == "VL102" and "Lightning" in f.message]  # default checks
    assert bool(found) is flagged, found
    if flagged:
        assert "on_validation_epoch_end" in found[0].message
        assert not found[0].fixes  # moving them to the CPU could break the epoch-end hook's device use


def test_every_table_entry_names_its_remedy():
    for entry in PER_BATCH_HOOKS:
        assert entry.framework and entry.bases and entry.hooks and entry.remedy
