"""Fixes that cannot break code: ``.detach()`` only on a proven tensor whose stored copy no backward needs."""

from __future__ import annotations

import ast
from textwrap import dedent

import pytest

from vramlens.lint import fix_source, lint_source

HEADER = """\
import torch
import torch.nn as nn

model = nn.Linear(4, 4)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""


def _fixes(body: str, code: str) -> list:
    source = HEADER + dedent(body).lstrip("\n")
    return [f.fixes for f in lint_source(source, preview=True) if f.code == code]


def test_a_proven_tensor_kept_across_steps_gets_its_detach():
    found = _fixes("""
        history = []
        def train(loader):
            for x, y in loader:
                out = model(x)
                loss = criterion(out, y)
                loss.backward()
                history.append(out)
        """, "VL102")
    assert found and found[0] and ".detach()" in found[0][0].title


@pytest.mark.parametrize("value", [
    "loss.item() if fixed else loss",  # a number on one branch: .detach() would raise there
    "{'loss': loss}",  # a dict has no .detach()
    "loss if fixed else 0.0",  # a float on the other branch
    "loss or None",
])
def test_no_detach_on_what_is_not_proven_a_tensor(value):
    found = _fixes(f"""
        history = []
        def train(loader, step, fixed):
            for x, y in loader:
                loss = criterion(model(x), y)
                result = step(x)
                history.append({value})
        """, "VL102")
    assert found, "the finding itself is expected (the value carries the loss's graph)"
    assert all(not fixes for fixes in found), found


GAN = """
class GAN(nn.Module):
    def forward(self, z):
        self.fake = self.gen(z)

    def backward_g(self):
        loss = self.disc(self.fake).mean()
        {tail}
"""


@pytest.mark.parametrize("tail, needed", [
    ("loss.backward()", True),  # the generator learns through the kept images
    ("self.scaler.scale(loss).backward()", True),
    ("return loss", True),  # the caller may backpropagate it
    ("print(loss.item())", False),
])
def test_a_stored_attribute_read_by_a_backward_in_another_method_needs_its_graph(tail, needed):
    from vramlens.lint.facts.fix_safety import needs_graph_later
    tree = ast.parse(GAN.format(tail=tail))
    cls = tree.body[0]
    forward = cls.body[0]
    assert needs_graph_later("self.fake", forward, cls) is needed


def test_no_detach_when_the_container_reaches_the_returned_loss():
    found = _fixes("""
        def chunked_loss(xs, ys):
            parts = []
            for x, y in zip(xs, ys):
                parts.append(criterion(model(x), y))
            return sum(parts)
        """, "VL102")
    assert all(not fixes for fixes in found)


def test_item_only_on_a_proven_scalar():
    found = _fixes("""
        def train(loader):
            total = 0.0
            for x, y in loader:
                out = model(x)
                loss = criterion(out, y)
                loss.backward()
                total += out
            return total
        """, "VL101")
    assert found and len(found[0]) == 1 and ".detach()" in found[0][0].title  # ``out`` is no 0-d tensor


def test_fix_source_leaves_unprovable_values_alone_and_parses():
    source = HEADER + dedent("""
        history = []
        def train(loader, fixed):
            for x, y in loader:
                loss = criterion(model(x), y)
                history.append(loss.item() if fixed else loss)
        """)
    fixed = fix_source(source, preview=True).text
    ast.parse(fixed)
    assert "history.append(loss.item() if fixed else loss)" in fixed


def test_a_cache_read_back_into_what_forward_returns_keeps_its_graph():
    """``self.prev = x.clone()`` read into the next call's input, whose outputs are appended and returned."""
    from vramlens.lint.facts.fix_safety import needs_graph_later
    source = """
class Causal(nn.Module):
    def forward(self, x):
        x = torch.cat([self.prev, x], dim=2)
        self.prev = x[:, :, -2:].clone()
        outputs = []
        for i in range(3):
            out = self.conv(x[:, :, i:i + 2])
            outputs.append(out)
        return torch.cat(outputs, 2)
"""
    cls = ast.parse(source).body[0]
    assert needs_graph_later("self.prev", cls.body[0], cls)
