"""Taint flows only through values known to be tensors or containers of them; ``.append`` is a list's only when
the receiver is known to be a list; each element of an unpacked tuple has its own labels."""

from __future__ import annotations

from textwrap import dedent

import pytest

from vramlens.lint import lint_source

HEADER = """\
import torch
import torch.nn as nn
model = nn.Linear(4, 4)
criterion = nn.MSELoss()
"""


def _codes(body: str) -> list[tuple[str, int]]:
    source = HEADER + dedent(body).lstrip("\n")
    return [(f.code, f.line - HEADER.count("\n")) for f in lint_source(source, preview=True)]


STEP = """
def step(x, y):
    loss = criterion(model(x), y)
    return loss, {{"n": 1}}, x.size(0)

class Trainer:
    def __init__(self):
        self.kept = []
    def fit(self, loader):
        for x, y in loader:
            result = step(x, y)
            loss, report, batch_size = result
            loss.backward()
            self.kept.append({value})
"""


@pytest.mark.parametrize("value, flagged", [("batch_size", False), ("report", False), ("loss", True), ("result[0]", True),
                                            ("result[2]", False)])
def test_a_tuple_kept_in_a_name_gives_each_element_its_own_labels(value, flagged):
    found = _codes(STEP.format(value=value))
    assert (("VL102", 13) in found) is flagged, found


@pytest.mark.parametrize("call, flagged", [
    ("self.kept.append(out)", True),
    ("self.metric.append(x, out, y)", False),  # not list.append's arity: the object's own method
    ("self.unknown.append(out)", False),  # never bound in the file: unknown, no finding
    ("self.meter.append(out)", False),  # bound to an object that is no list
])
def test_append_is_a_lists_only_when_the_receiver_is_known_to_be_one(call, flagged):
    found = _codes(f"""
        class Trainer:
            def __init__(self, metric):
                self.kept = []
                self.metric = metric
                self.meter = AverageMeter()
            def fit(self, loader):
                for x, y in loader:
                    out = model(x)
                    loss = criterion(out, y)
                    loss.backward()
                    {call}
        """)
    assert (("VL102", 11) in found) is flagged, found


def test_a_ratio_of_sizes_is_a_number():
    found = _codes("""
        class Trainer:
            def __init__(self):
                self.ratios = []
            def fit(self, loader):
                for x, y in loader:
                    out = model(x)
                    ratio = out.size(0) / x.size(0)
                    criterion(out, y).backward()
                    self.ratios.append(ratio)
        """)
    assert found == []


def test_a_list_from_a_dataclass_field_or_an_annotation_is_a_list():
    found = _codes("""
        from dataclasses import dataclass, field
        from typing import List

        @dataclass
        class History:
            outputs: List[torch.Tensor] = field(default_factory=list)

            def fit(self, loader):
                for x, y in loader:
                    out = model(x)
                    criterion(out, y).backward()
                    self.outputs.append(out)
        """)
    assert ("VL102", 12) in found


def test_state_its_own_class_detaches_is_no_accumulation():
    """A memory updated by key on every forward and detached by the module's own ``detach()`` (TGN's)."""
    body = """
        class Memory(nn.Module):
            def __init__(self):
                super().__init__()
                self.memory = {{}}
                self.gru = nn.GRUCell(4, 4)
            {detach}
            def forward(self, n_id, x):
                out = self.gru(x)
                self.memory[n_id] = out
                return out
        """
    assert ("VL103", 9) in _codes(body.format(detach=""))
    assert _codes(body.format(detach="def detach(self):\n                self.memory.detach_()")) == []
