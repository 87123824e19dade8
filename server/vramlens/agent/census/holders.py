"""Who holds the remaining tensors: the container, and the chain to it from a named root.

Two searches, both bounded by the time budget:
  1. a walk outward from the named roots (``roots.py``, tier by tier, breadth first, so each
     tensor is reached by its shortest path from the best-named root), which stops as soon as
     every tensor sought has been reached;
  2. for the tensors the walk did not reach (held through C++ structures, or further away
     than the walk went), ``gc.get_referrers`` — one call visits every object in the process,
     so tensors are asked about in batches, largest first — then climbing from the referrer
     towards a named root or an object the walk already reached, a few levels at most.

A tensor's holder is the nearest object above it that has a name of its own (reached through a
global, a local, an attribute, a string key, a traceback's frame, a closure variable): a list of
tuples of tensors held in a global ``history`` is one holder, ``history``, not one per tuple.
"""

from __future__ import annotations

import gc
import types
from collections import deque

from .graph import FRAME, TENSOR, Graph, is_named, key_label, type_name
from .threads import describe

DEPTH = 8  # references followed from a root by the walk
NODES = 100_000  # objects the walk keeps track of
BATCH = 32  # tensors asked about in one gc.get_referrers call
CLIMB = 5  # levels climbed from a referrer towards a named root
WIDTH = 32  # referrers followed per level of a climb
NAMES = 20  # member names listed per holder


class _Stop(Exception):
    """The walk's time or node budget ran out."""


class Holder:
    __slots__ = ("key", "tensors", "names", "bytes", "container", "chain", "found_by")

    def __init__(self, key: int):
        self.key = key
        self.tensors: list[int] = []
        self.names: list = []
        self.bytes = 0
        self.container: dict = {}
        self.chain: list[dict] | None = None
        self.found_by = "walk"


class HolderSearch:
    def __init__(self, graph: Graph, inventory, budget, frames, own_ids: set[int], own_types: tuple):
        self.graph, self.inventory, self.budget, self.frames = graph, inventory, budget, frames
        self.own_ids, self.own_types = own_ids, own_types
        self.parents: dict[int, tuple] = {}  # id(node) -> (parent key, edge kind, label); a key < 0 is a root space
        self.nodes: dict[int, object] = {}  # id(node) -> node, kept alive so that ids stay theirs
        self.by_referrers: set[int] = set()  # nodes placed by the referrer search
        self.spaces: list = []
        self.namespaces: dict[int, int] = {}  # id(namespace dict or frame) -> root space key
        self.found: dict[int, tuple] = {}  # tensor index -> (parent key, edge kind, label)
        self.targets: set[int] = set()
        self.cut: str | None = None
        self._steps = 0
        own_ids.update((id(self.nodes), id(self.parents)))

    # -- 1. the walk from the named roots ---------------------------------------------------
    def walk(self, tiers: list[list], targets: set[int]) -> None:
        self.targets = targets
        keyed = []
        for tier in tiers:
            keyed.append([(self._register(space), space) for space in tier])
        for tier in keyed:
            if self._done() or self.cut:
                break
            queue: deque = deque()
            try:
                for key, space in tier:
                    for kind, label, value in space.items:
                        self._visit(value, key, kind, label, 1, queue)
                self._drain(queue)
            except _Stop:
                break
        for tier in tiers:
            for space in tier:
                space.release()

    def _register(self, space) -> int:
        key = -1 - len(self.spaces)
        self.spaces.append(space)
        if space.namespace_id is not None:
            self.namespaces[space.namespace_id] = key
        return key

    def _done(self) -> bool:
        return len(self.found) >= len(self.targets)

    def _drain(self, queue: deque) -> None:
        while queue and not self._done():
            node, depth = queue.popleft()
            try:
                for kind, label, child in self.graph.edges(node):
                    self._visit(child, id(node), kind, label, depth + 1, queue)
            except _Stop:
                raise
            except Exception:  # changed while being read (another thread): keep what was found
                continue

    def _visit(self, value, parent: int, kind: str, label, depth: int, queue: deque) -> None:
        self._steps += 1
        if not self._steps & 4095 and self.budget.spent():
            self.cut = "time"
            raise _Stop
        if value is None or id(value) in self.parents:
            return
        index = self.inventory.index(value)
        if index is not None:
            if index in self.targets and index not in self.found:
                self.found[index] = (parent, kind, label)
            if self.inventory.storage_of(index).role == "parameter":
                return  # a parameter's gradient is named already
        elif self.graph.kind(type(value)) == TENSOR:
            return  # a tensor the device filter left out
        if depth > DEPTH or not self.graph.opens(value):
            return
        if len(self.parents) >= NODES:
            self.cut = "nodes"
            raise _Stop
        self.parents[id(value)] = (parent, kind, label)
        self.nodes[id(value)] = value
        queue.append((value, depth))

    # -- 2. gc.get_referrers for the rest ----------------------------------------------------
    def search_referrers(self) -> None:
        pending = sorted((index for index in self.targets if index not in self.found),
                         key=lambda index: self.inventory.storage_of(index).nbytes, reverse=True)
        while pending and not self.budget.spent():
            batch = [self.inventory.objects[index] for index in pending[:BATCH]]
            wanted = {id(tensor): tensor for tensor in batch}
            referrers = self._referrers(batch, wanted)
            del batch, wanted
            for referrer in referrers:
                held = self._edges_to(referrer, None)
                if not held:
                    continue
                key = self._link(referrer, extra=(id(referrers),))
                for child, kind, label in held:
                    index = self.inventory.index(child)
                    if index not in self.found:
                        self.found[index] = (key, kind, label)
                del held
            del referrers
            pending = [index for index in pending[BATCH:] if index not in self.found]

    def _referrers(self, objects: list, wanted: dict, extra: tuple = ()) -> list:
        """gc.get_referrers, without the census' own lists, entries and frames."""
        skip = self.own_ids | {id(objects), id(wanted), *extra}
        found = []
        for referrer in gc.get_referrers(*objects):
            if id(referrer) in skip or type(referrer) in self.own_types:
                continue
            if type(referrer) is types.FrameType and self.frames.is_own(referrer.f_code.co_filename):
                continue
            found.append(referrer)
        return found

    def _edges_to(self, parent, wanted: dict | None) -> list:
        """(child, kind, label) for the references from ``parent`` to the objects wanted
        (``None``: to any tensor sought and not yet found)."""
        if id(parent) in self.namespaces:
            space = self.spaces[-1 - self.namespaces[id(parent)]]
            kind = "global" if "module" in space.where else "local"
            try:
                edges = [(kind, key_label(name), value) for name, value in dict.items(parent)] \
                    if type(parent) is dict else list(self.graph.edges(parent))
            except Exception:
                return []
        else:
            try:
                edges = list(self.graph.edges(parent))
            except Exception:
                return []
        held = []
        for kind, label, child in edges:
            if wanted is None:
                index = self.inventory.index(child)
                if index is not None and index in self.targets and index not in self.found:
                    held.append((child, kind, label))
            elif id(child) in wanted:
                held.append((child, kind, label))
        return held

    def _link(self, start, extra: tuple) -> int:
        """The key under which ``start`` is known, placing it (and the objects climbed through)
        below a named root or a node of the walk when a few levels of referrers reach one."""
        if id(start) in self.namespaces:
            return self.namespaces[id(start)]
        if id(start) in self.parents:
            return id(start)
        # Only ids in these two, and the objects in ``climbed``: what refers to an object must
        # not be the census' own bookkeeping.
        below: dict[int, tuple] = {}  # id(upper) -> (id(lower), kind, label)
        climbed = {id(start): start}
        frontier, seen = [start], {id(start)}
        for _ in range(CLIMB):
            if not frontier or self.budget.spent():
                break
            wanted = {id(lower): lower for lower in frontier}
            upper: list = []
            referrers = self._referrers(frontier, wanted, extra=(id(upper), id(climbed), *extra))
            for referrer in referrers:
                if id(referrer) in seen:
                    continue
                edges = self._edges_to(referrer, wanted)
                if not edges:
                    continue
                seen.add(id(referrer))
                lower, kind, label = edges[0]
                below[id(referrer)] = (id(lower), kind, label)
                del edges, lower
                anchor = self.namespaces.get(id(referrer), id(referrer) if id(referrer) in self.parents else None)
                if anchor is not None:
                    self._place_below(anchor, id(referrer), below, climbed)
                    return id(start)
                climbed[id(referrer)] = referrer
                upper.append(referrer)
                if len(upper) >= WIDTH:
                    break
            del referrers, wanted
            frontier = upper
        self._place(start, None, None, None)
        return id(start)

    def _place_below(self, anchor: int, top: int, below: dict, climbed: dict) -> None:
        parent, current = anchor, top
        while current in below:
            lower, kind, label = below[current]
            if lower not in self.parents:
                self._place(climbed[lower], parent, kind, label)
            parent, current = lower, lower

    def _place(self, node, parent, kind, label) -> None:
        self.parents[id(node)] = (parent, kind, label)
        self.nodes[id(node)] = node
        self.by_referrers.add(id(node))

    # -- the holders ---------------------------------------------------------------------
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
    kept = []
    for holder in holders:
        owner, claimed = len(kept), False
        for index in holder.tensors:
            if not inventory.claimed(index):
                claimed = True
                holder.bytes += inventory.claim(index, "held", owner)
        if claimed:
            kept.append(holder)
    return kept


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
            parts.append({"member": "{…}", "tb_frame": ".tb_frame", "tb_next": ".tb_next",
                          "cell": ".cell_contents", "grad": ".grad"}.get(edge, f".<{edge}>"))
    return "".join(parts)
