"""Mechanisms behind false findings of the held-out codebases, each beside the nearby true case that must stay
flagged. Round 4: micro-batch outputs joined into the returned value, state its own class detaches, and a count
computed by a helper object of the file from what a data transform is given. Round 5: the call's result left in
a per-batch context that the callers hand in and replace."""

from __future__ import annotations

from textwrap import dedent

from vramlens.lint import lint_source

HEADER = """\
import torch
import torch.nn as nn
from typing import Optional
model = nn.Linear(4, 4)
criterion = nn.MSELoss()
"""


def _codes(body: str) -> list[tuple[str, int]]:
    source = HEADER + dedent(body).lstrip("\n")
    return [(f.code, f.line - HEADER.count("\n")) for f in lint_source(source, preview=True)]


BATCHED = """
def batched_forward(model, data, device, batch_size):
    model_dev = model.to(device)
    out_list = []
    for st in range(0, len(data), batch_size):
        out_list.append(model_dev(data[st:st + batch_size].to(device)))
    {ending}
"""


def test_micro_batch_outputs_joined_into_the_result_are_the_result():
    """kornia's ``batched_forward``: the graphs are the call's result, kept only during the call."""
    assert _codes(BATCHED.format(ending="out = torch.cat(out_list, 0)\n    return out.to(data.device)")) == []
    assert _codes(BATCHED.format(ending="return torch.stack(out_list).mean()")) == []
    assert _codes(BATCHED.format(ending="return sum(out_list) / len(out_list)")) == []


def test_a_list_returned_as_it_is_or_kept_stays_flagged():
    assert ("VL102", 5) in _codes(BATCHED.format(ending="return out_list"))
    kept = _codes(BATCHED.format(ending="HISTORY.extend(out_list)\n    return torch.cat(out_list)"))
    assert ("VL102", 5) in kept


def test_a_training_loop_joining_its_losses_stays_flagged():
    """A backward in the function: the loop trains, and each kept loss holds its step's graph."""
    body = """
        def train(loader, optimizer):
            losses = []
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                losses.append(loss)
            return torch.stack(losses).mean()
        """
    assert ("VL102", 7) in _codes(body)


def test_outputs_over_a_loader_joined_into_the_result_stay_flagged():
    """Not chunks of the call's input: a whole dataset's graphs, the signature of an evaluation without no_grad."""
    body = """
        def evaluate(model, loader):
            model.eval()
            preds = []
            for x in loader:
                preds.append(model(x))
            return torch.cat(preds)
        """
    assert ("VL102", 5) in _codes(body)


def test_chunks_split_from_the_input_joined_into_the_result_are_the_result():
    body = """
        def chunked(model, data, n):
            outs = []
            for part in data.split(n):
                outs.append(model(part))
            return torch.cat(outs)
        """
    assert _codes(body) == []


MEMORY = """
class Memory(nn.Module):
    def __init__(self):
        super().__init__()
        self.memory = torch.zeros(8, 4)
        self.gru = nn.GRUCell(4, 4)
{detach}
    def forward(self, n_id, x):
        out = self.gru(x)
        self.memory[n_id] = out
        return out
"""


def test_state_its_own_class_detaches_by_rebinding_is_no_accumulation():
    """TGN's memory: ``detach()`` of the module cuts it where the training loop says."""
    assert ("VL103", 9) in _codes(MEMORY.format(detach=""))
    rebinding = "    def detach(self):\n        self.memory = self.memory.detach()\n"
    assert _codes(MEMORY.format(detach=rebinding)) == []
    other = "    def detach(self):\n        self.other = self.other.detach()\n"
    assert ("VL103", 11) in _codes(MEMORY.format(detach=other))


PAD = """
class _NumNodes:
    def __init__(self, value):
        self.value = value

    def get_value(self, key=None) -> Optional[int]:
        return self.value if isinstance(self.value, int) else self.value[key]


class _NumEdges:
    def __init__(self, value, num_nodes: _NumNodes):
        self.value = value
        self.num_nodes = num_nodes

    def get_value(self, key=None) -> Optional[int]:
        if key not in self.value:
            self.value[key] = self.num_nodes.get_value(key[0]) * self.num_nodes.get_value(key[-1])
        return self.value[key]


class Pad(BaseTransform):
    def __init__(self):
        self.max_num_edges = _NumEdges({{}}, _NumNodes(3))

    def forward(self, data):
        for edge_type, edge_store in data.edge_items():
            self.pad(edge_store, edge_type)
        return data

    def pad(self, store, edge_type=None):
        return self.max_num_edges.get_value(edge_type)
"""


def test_a_count_from_a_helper_object_annotated_int_keeps_no_graph():
    """torch-geometric's ``Pad`` transform: what ``_NumEdges.get_value`` stores is a product of counts."""
    assert _codes(PAD.format()) == []


def test_a_helper_object_without_a_scalar_annotation_still_keeps_its_argument():
    unannotated = PAD.format().replace(") -> Optional[int]:", "):")
    assert ("VL103", 26) in _codes(unannotated)


POSTPROC = """
class PipelinedPostproc(nn.Module):
    def __init__(self, module: nn.Module, fqn: str, context):
        super().__init__()
        self._module = module
        self._fqn = fqn
        self._context = context
        self._cache = {{}}

    def forward(self, x):
        if self._fqn in self._context.results:
            return self._context.results[self._fqn]
        res = self._module(x)
        {store}
        return res
{setter}"""
SETTER = "\n    def set_context(self, context):\n        self._context = context\n"


def test_the_result_left_in_a_context_its_callers_replace_is_theirs():
    """torchrec's pipelined postproc: each batch's context, swapped by ``set_context``, caches the forward's result
    for that batch's own forward, which backpropagates it."""
    assert _codes(POSTPROC.format(store="self._context.results[self._fqn] = res", setter=SETTER)) == []


def test_a_context_set_once_or_given_more_than_the_result_stays_flagged():
    no_setter = POSTPROC.format(store="self._context.results[self._fqn] = res", setter="")
    assert ("VL103", 13) in _codes(no_setter)  # held by the module for its whole life
    other = POSTPROC.format(store="self._context.results[self._fqn] = res * 2", setter=SETTER)
    assert ("VL103", 13) in _codes(other)  # not what the call returns: a graph the caller never receives
    own = POSTPROC.format(store="self._cache[self._fqn] = res", setter=SETTER)
    assert ("VL103", 13) in _codes(own)  # the module's own dict, which no caller replaces
