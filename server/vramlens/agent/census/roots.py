"""The named places a holder is found from: extra roots, frames' locals, modules' globals.

They come in three tiers, searched in this order so that the name a person would use wins:
  1. the caller's ``extra_roots`` (a notebook's ``Out``, ``_``), the locals of the user's own
     functions executing now, the globals of ``__main__`` and of the user's modules, and the
     tracebacks ``sys`` keeps (``sys.last_traceback``, ``sys.last_value``, ``sys.last_exc``);
  2. the locals of library functions executing now (a trainer's evaluation loop);
  3. the globals of every other module.
"""

from __future__ import annotations

import sys

from .graph import key_label
from .threads import Frames, UserCode, describe, is_module_level

SYS_KEPT = ("last_traceback", "last_value", "last_exc")


class RootSpace:
    """One namespace: ``items`` are (edge kind, name, value); ``where`` says whose names they are.
    A module's items are read from its namespace only when the walk comes to it."""

    __slots__ = ("where", "_items", "_namespace", "namespace_id")

    def __init__(self, where: dict, items: list | None, namespace_id: int | None = None, namespace: dict | None = None):
        self.where = where
        self._items = items
        self._namespace = namespace
        self.namespace_id = namespace_id  # id of the dict or frame whose names these are

    @property
    def items(self) -> list:
        if self._items is None:
            self._items = _module_items(self._namespace) if self._namespace is not None else []
            self._namespace = None
        return self._items

    def step(self, kind: str, label) -> dict:
        """The first step of a chain: the root's name, with where it lives."""
        return dict(self.where, edge=kind, name=label)

    def release(self) -> None:
        """Drop the references to the values, so they stop showing up as referrers of the census' own."""
        self._items, self._namespace = [], None


def _module_items(namespace: dict) -> list:
    try:
        return [("global", key_label(name), value) for name, value in list(dict.items(namespace))
                if not (type(name) is str and name.startswith("__") and name.endswith("__"))]
    except Exception:
        return []


def _frame_space(frame, thread: str | None) -> RootSpace | None:
    try:
        namespace = frame.f_locals
        names = list(namespace.items())
    except Exception:
        return None
    where = dict(describe(frame), thread=thread)
    where["function"] = where.pop("name")
    # Up to 3.12 reading f_locals leaves a dict in the frame: that dict is what refers to the values.
    namespace_id = id(namespace) if type(namespace) is dict else id(frame)
    return RootSpace(where, [("local", key_label(name), value) for name, value in names], namespace_id)


class Roots:
    def __init__(self, frames: Frames, user_code: UserCode, extra_roots: dict | None):
        self.module_names: dict[int, str] = {}  # id(module namespace) -> module name
        self.tiers: list[list[RootSpace]] = [[], [], []]
        self.user_frames: list[tuple] = []  # (frame, thread name) of the user's functions
        if extra_roots:
            items = [("extra_root", key_label(name), value) for name, value in list(extra_roots.items())]
            self.tiers[0].append(RootSpace({}, items))
        for frame, thread in frames.all():
            if is_module_level(frame):
                continue  # its locals are a module's globals, found as such
            user = user_code(frame.f_code.co_filename)
            if user:
                self.user_frames.append((frame, thread))
            space = _frame_space(frame, thread)
            if space is not None:
                self.tiers[0 if user else 1].append(space)
        self._modules(frames, user_code)

    def _modules(self, frames: Frames, user_code: UserCode) -> None:
        for name, module in list(sys.modules.items()):
            try:
                namespace = object.__getattribute__(module, "__dict__")
            except Exception:
                continue
            if type(namespace) is not dict:
                continue
            self.module_names[id(namespace)] = name
            filename = namespace.get("__file__")
            filename = filename if type(filename) is str else ""
            if frames.is_own(filename):
                continue  # the census' own modules hold nothing of the user's
            where = {"module": name}
            if name == "sys":
                kept = [("global", key, namespace[key]) for key in SYS_KEPT if namespace.get(key) is not None]
                self.tiers[0].append(RootSpace(where, kept, id(namespace)))
            elif name == "__main__" or user_code(filename):
                self.tiers[0].append(RootSpace(where, None, id(namespace), namespace))
            else:
                self.tiers[2].append(RootSpace(where, None, id(namespace), namespace))

    def names_for(self) -> dict[int, list[str]]:
        """id(value) -> the names tier 1 gives it directly (``__main__.model``, a local ``opt``)."""
        names: dict[int, list[str]] = {}
        for space in self.tiers[0]:
            for kind, label, value in space.items:
                text = f"{space.where['module']}.{label}" if kind == "global" else str(label)
                found = names.setdefault(id(value), [])
                if len(found) < 3 and text not in found:
                    found.append(text)
        return names
