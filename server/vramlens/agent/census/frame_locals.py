"""Tensors bound to the locals of the user's own functions executing now: the batch, the inputs,
the outputs a step holds — by variable name, with the function, file and line.

A local counts when it is a tensor, or a list, tuple, dict or set of them (two levels down, so
a list of (input, target) pairs or a tokenizer's dict-like batch is found). Objects are not
entered: ``self.val_outputs`` is a holder, named from ``self``, not a local.
"""

from __future__ import annotations

import collections

from .graph import DICT, SEQUENCE, SET, Graph, is_a, type_name
from .threads import describe

LEVELS = 2
_CONTAINERS = (DICT, SEQUENCE, SET)


class LocalEntry:
    __slots__ = ("name", "where", "container", "length", "tensors", "bytes")

    def __init__(self, name: str, where: dict, container: str, length: int | None):
        self.name, self.where, self.container, self.length = name, where, container, length
        self.tensors: list[int] = []
        self.bytes = 0


def describe_locals(graph: Graph, inventory, user_frames: list) -> list[LocalEntry]:
    """``user_frames``: (frame, thread name), outermost first: a tensor passed down is named where it began."""
    found = []
    for frame, thread in user_frames:
        try:
            names = list(frame.f_locals.items())
        except Exception:
            continue
        where = dict(describe(frame), thread=thread)
        where["function"] = where.pop("name")
        for name, value in names:
            index = inventory.index(value)
            if index is not None:
                entry = LocalEntry(str(name), where, "tensor", None)
                entry.tensors.append(index)
                found.append(entry)
                continue
            contents = _container_of(graph, value)
            if contents is None:
                continue
            entry = LocalEntry(str(name), where, type_name(type(value)), graph.length(value))
            _collect(graph, inventory, contents, entry.tensors)
            if entry.tensors:
                found.append(entry)
    return found


def _container_of(graph: Graph, value):
    """The object whose items hold the tensors: the container itself, or a UserDict's/UserList's data."""
    if graph.kind(type(value)) in _CONTAINERS:
        return value
    if is_a(value, collections.UserDict, collections.UserList):
        data = (graph.instance_dict(value) or {}).get("data")
        return data if graph.kind(type(data)) in _CONTAINERS else None
    return None


def _collect(graph: Graph, inventory, container, into: list, level: int = 1) -> None:
    try:
        children = [child for _, _, child in graph.edges(container)]
    except Exception:  # changed while being read (another thread)
        return
    for child in children:
        index = inventory.index(child)
        if index is not None:
            into.append(index)
        elif level < LEVELS:
            inner = _container_of(graph, child)
            if inner is not None:
                _collect(graph, inventory, inner, into, level + 1)


def claim(inventory, entries: list[LocalEntry]) -> list[LocalEntry]:
    """Claim in order; the entries that hold storages of their own are kept."""
    return inventory.claim_in_order(entries, "frame_local")
