"""Optimizer state: every live ``torch.optim.Optimizer``, its parameters, and the state it keeps.

Read from the optimizer's own ``state`` and ``param_groups`` attributes (a wrapper that only
forwards them, such as a library's optimizer wrapper, keeps none of its own and is left out:
the optimizer it wraps is found by itself). Each state tensor is tied to its optimizer and,
when the parameter belongs to a live module, to that parameter's name.
"""

from __future__ import annotations

from .graph import Graph, is_a, key_label

NESTING = 2  # levels of lists and dicts inside one parameter's state that are searched


class StateTensor:
    __slots__ = ("key", "tensor", "param", "root")

    def __init__(self, key: str, tensor: int, param: str | None, root: int | None):
        self.key, self.tensor, self.param, self.root = key, tensor, param, root


class OptimizerEntry:
    __slots__ = ("optimizer", "cls", "param_count", "param_bytes", "state", "state_bytes", "bytes_by_key", "step")

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.cls = type(optimizer)
        self.param_count = 0
        self.param_bytes = 0
        self.state: list[StateTensor] = []
        self.state_bytes = 0
        self.bytes_by_key: dict[str, int] = {}
        self.step: int | None = None


def describe(graph: Graph, inventory, optimizers: list, param_names: dict) -> list[OptimizerEntry]:
    """``param_names``: id(parameter) -> (root module index, name)."""
    found = []
    for optimizer in optimizers:
        attributes = graph.instance_dict(optimizer) or {}
        groups, state = attributes.get("param_groups"), attributes.get("state")
        groups = groups if is_a(groups, list) else None
        state = state if is_a(state, dict) else None
        if groups is None and state is None:
            continue
        entry = OptimizerEntry(optimizer)
        _count_params(entry, groups or [], inventory)
        if state is not None:
            for param, values in dict.items(state):
                root, name = param_names.get(id(param), (None, None))
                for key, value in _state_values(values):
                    _note_step(entry, key, value)
                    index = inventory.index(value)
                    if index is not None:
                        entry.state.append(StateTensor(key, index, name, root))
        found.append(entry)
    return found


def _count_params(entry: OptimizerEntry, groups: list, inventory) -> None:
    storages = set()
    for group in groups:
        params = dict.get(group, "params", ()) if is_a(group, dict) else ()
        for param in params if is_a(params, list, tuple) else ():
            entry.param_count += 1
            index = inventory.index(param)
            if index is not None:
                storages.add(inventory.facts[index].storage)
    entry.param_bytes = sum(inventory.storages[key].nbytes for key in storages)


def _state_values(values, prefix: str = "", depth: int = 0):
    """(key, value) of one parameter's state; lists and dicts inside it named key.0, key.sub."""
    if is_a(values, dict):
        items = ((str(key_label(key)), value) for key, value in dict.items(values))
    elif is_a(values, list, tuple) and depth > 0:
        items = ((str(position), value) for position, value in enumerate(values))
    else:
        return
    for key, value in items:
        name = prefix + key
        if is_a(value, dict, list, tuple) and depth < NESTING:
            yield from _state_values(value, name + ".", depth + 1)
        else:
            yield name, value


def _note_step(entry: OptimizerEntry, key: str, value) -> None:
    """The optimizer's step count, read only where that costs no device synchronisation."""
    if key != "step":
        return
    step = None
    if type(value) in (int, float):
        step = int(value)
    else:
        try:
            if not value.is_cuda and value.numel() == 1:
                step = int(value.item())
        except Exception:
            return
    if step is not None and (entry.step is None or step > entry.step):
        entry.step = step


def claim(inventory, entries: list[OptimizerEntry]) -> None:
    for owner, entry in enumerate(entries):
        for state in entry.state:
            claimed = inventory.claim(state.tensor, "optimizer_state", owner)
            entry.state_bytes += claimed
            entry.bytes_by_key[state.key] = entry.bytes_by_key.get(state.key, 0) + claimed
