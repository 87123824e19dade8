"""Holders: what the holder search found, grouped by the container that holds it, with the
chain from a named root down to that container.

A tensor's holder is the nearest object above it that has a name of its own (reached through a
global, a local, an attribute, a string key, a traceback's frame, a closure variable, an object's
``__dict__``): a list of tuples of tensors held in a global ``history`` is one holder, ``history``,
not one per tuple.
"""

from __future__ import annotations

from .graph import FRAME, is_named, type_name
from .threads import describe

NAMES = 20  # member names listed per holder


class Holder:
    __slots__ = ("key", "tensors", "names", "bytes", "container", "chain", "found_by", "search")

    def __init__(self, key: int):
        self.key = key
        self.tensors: list[int] = []
        self.names: list = []
        self.bytes = 0
        self.container: dict = {}
        self.chain: list[dict] | None = None
        self.found_by = "walk"
        # rooted: the chain leads to a named root; no_root: every referrer was followed and none
        # leads to one (a reference cycle awaiting collection, or held from C++); limit: the
        # search stopped at its levels, width or time before finding one.
        self.search = "rooted"


class Grouping:
    """Reads a finished HolderSearch (its parents, nodes, root spaces and what it found)."""

    def __init__(self, search):
        self.graph = search.graph
        self.parents, self.nodes, self.spaces = search.parents, search.nodes, search.spaces
        self.found, self.by_referrers, self.unrooted = search.found, search.by_referrers, search.unrooted

    def holders(self) -> list[Holder]:
        groups: dict[int, Holder] = {}
        for index, (parent, kind, label) in self.found.items():
            key = self._container_key(parent)
            holder = groups.get(key)
            if holder is None:
                holder = groups[key] = Holder(key)
            holder.tensors.append(index)
            name = self._member_name(key, parent, kind, label)
            if name is not None and len(holder.names) < NAMES and name not in holder.names:
                holder.names.append(name)
        for holder in groups.values():
            holder.container = self._describe_container(holder.key)
            holder.chain = self._chain(holder.key)
            holder.found_by = "referrers" if self._placed_by_referrers(holder.key) else "walk"
            if holder.chain is None:
                holder.search = self.unrooted.get(holder.key, "limit")
        return list(groups.values())

    def _container_key(self, parent: int) -> int:
        key = parent
        while key >= 0:
            up, kind, label = self.parents[key]
            if up is None or is_named(kind, label):
                return key
            key = up
        return key

    def _member_name(self, container: int, parent: int, kind: str, label):
        """The name under which the container holds the tensor (for namespaces, objects, str-keyed dicts)."""
        key, edge = parent, (kind, label)
        while key != container and key >= 0:
            up, up_kind, up_label = self.parents[key]
            key, edge = up, (up_kind, up_label)
        return edge[1] if is_named(*edge) else None

    def _placed_by_referrers(self, key: int) -> bool:
        while key >= 0:
            if key in self.by_referrers:
                return True
            key = self.parents[key][0]
            if key is None:
                return True
        return False

    def _chain(self, key: int) -> list[dict] | None:
        """The steps from the root down to the container; None when no named root was found."""
        steps = []
        while key is not None and key >= 0:
            up, kind, label = self.parents[key]
            if up is None:
                return None
            steps.append(self._step(kind, label, self.nodes[key]))
            key = up
        if not steps:
            return []
        steps.reverse()
        root = self.spaces[-1 - key]
        steps[0] = dict(root.where, **steps[0])
        return steps

    def _step(self, kind: str, label, node) -> dict:
        step = {"edge": kind, "name": label, "type": type_name(type(node))}
        if kind == "tb_frame":
            where = describe(node)
            step.update(function=where["name"], filename=where["filename"], line=where["line"])
        return step

    def _describe_container(self, key: int) -> dict:
        if key < 0:
            space = self.spaces[-1 - key]
            kind = "globals" if "module" in space.where else "locals" if "function" in space.where else "extra_roots"
            return dict(space.where, kind=kind)
        node = self.nodes[key]
        described = {"kind": self.graph.container_kind(node), "type": type_name(type(node)),
                     "length": self.graph.length(node)}
        if self.graph.kind(type(node)) == FRAME:
            where = describe(node)
            described.update(function=where["name"], filename=where["filename"], line=where["line"])
        return described


def claim(inventory, holders: list[Holder]) -> list[Holder]:
    """Largest first; a storage two holders share goes to the larger. Holders left with nothing
    of their own are dropped."""
    def size(holder: Holder) -> int:
        storages = {inventory.facts[index].storage for index in holder.tensors if not inventory.claimed(index)}
        return sum(inventory.storages[key].nbytes for key in storages)

    holders.sort(key=size, reverse=True)
    return inventory.claim_in_order(holders, "held")


def path_text(chain: list[dict] | None) -> str | None:
    """A readable, Python-like expression for a chain: ``__main__.clf.val_outputs``."""
    if chain is None:
        return None
    parts = []
    for position, step in enumerate(chain):
        edge, name = step["edge"], step["name"]
        if position == 0:
            parts.append(f"{step['module']}.{name}" if edge == "global" else str(name))
        elif edge == "attribute":
            parts.append(f".{name}")
        elif edge in ("key", "local"):
            parts.append(f"[{name!r}]" if edge == "key" else f".f_locals[{name!r}]")
        elif edge == "index":
            parts.append(f"[{name}]")
        elif edge == "closure":
            parts.append(f".<closure {name}>")
        else:
            parts.append({"member": "{…}", "tb_frame": ".tb_frame", "tb_next": ".tb_next", "__dict__": ".__dict__",
                          "cell": ".cell_contents", "grad": ".grad", "referrer": ".<referrer>"}.get(edge, f".<{edge}>"))
    return "".join(parts)
