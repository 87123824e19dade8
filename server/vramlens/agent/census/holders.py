"""Who holds the remaining tensors: the container, and the chain to it from a named root.

Two searches, both bounded by the time budget:
  1. a walk outward from the named roots (``roots.py``, tier by tier, breadth first, so each
     tensor is reached by its shortest path from the best-named root), which stops as soon as
     every tensor sought has been reached;
  2. for the tensors the walk did not reach (held through C++ structures, or further away
     than the walk went), ``gc.get_referrers`` — one call visits every object in the process,
     so tensors are asked about in batches, largest first — then climbing from the referrer
     towards a named root or an object the walk already reached, a few levels at most.

What the searches found becomes holders in ``holder_groups.py``.
"""

from __future__ import annotations

import gc
import types
from collections import deque

from .graph import TENSOR, Graph, key_label, mro

DEPTH = 8  # references followed from a root by the walk
NODES = 100_000  # objects the walk keeps track of
WIDE = 1_000  # children of one object walked into (all of them are looked at)
BATCH = 32  # tensors asked about in one gc.get_referrers call
CLIMB = 5  # levels climbed from a referrer towards a named root
WIDTH = 32  # referrers followed per level of a climb
RESERVE = 0.4  # share of the budget left to the referrer search when the walk begins


class _Stop(Exception):
    """The walk's time or node budget ran out."""


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
        self.unrooted: dict[int, str] = {}  # id(node) placed without a root -> no_root | limit
        self.cut: str | None = None
        self._steps = 0
        self._reserve = 0.0  # seconds of the budget the walk leaves to the referrer search
        own_ids.update((id(self.nodes), id(self.parents)))

    # -- 1. the walk from the named roots ---------------------------------------------------
    def walk(self, tiers: list[list], targets: set[int]) -> None:
        self.targets = targets
        self._reserve = RESERVE * max(self.budget.left(), 0.0)
        keyed = []
        for tier in tiers:
            keyed.append([(self._register(space), space) for space in tier])
        try:
            for tier in keyed:
                if self._done() or self.cut == "time":
                    break
                queue: deque = deque()
                try:
                    for key, space in tier:
                        for kind, label, value in space.items:
                            self._visit(value, key, kind, label, 1, queue)
                    self._drain(queue)
                except _Stop:
                    break
        finally:
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
            queued = 0
            try:
                for kind, label, child in self.graph.edges(node):
                    queued += self._visit(child, id(node), kind, label, depth + 1, queue, queued < WIDE)
            except _Stop:
                raise
            except Exception:  # changed while being read (another thread): keep what was found
                continue

    def _visit(self, value, parent: int, kind: str, label, depth: int, queue: deque, may_queue: bool = True) -> int:
        """Note a tensor sought; queue anything else that may hold one (1 when queued). Every child
        of a wide container is looked at, but only its first WIDE are walked into, so one list of a
        million records cannot use up the walk before its siblings are looked into."""
        self._steps += 1
        if not self._steps & 4095 and self.budget.left() <= self._reserve:
            self.cut = "time"
            raise _Stop
        if value is None or id(value) in self.parents:
            return 0
        index = self.inventory.index(value)
        if index is not None:
            if index in self.targets and index not in self.found:
                self.found[index] = (parent, kind, label)
            if self.inventory.storage_of(index).role == "parameter":
                return 0  # a parameter's gradient is named already
        elif self.graph.kind(type(value)) == TENSOR:
            return 0  # a tensor the device filter left out
        if not may_queue or depth > DEPTH or not self.graph.opens(value):
            return 0
        if len(self.parents) >= NODES:
            self.cut = "nodes"  # from here on only what is already queued is looked into
            return 0
        self.parents[id(value)] = (parent, kind, label)
        self.nodes[id(value)] = value
        queue.append((value, depth))
        return 1

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
        if wanted is not None:
            # An object refers to its attributes through its own __dict__ once that dict exists
            # (always before Python 3.11, and after anything read obj.__dict__): climbing from
            # an attribute's value meets the dict first, then the object.
            attributes = self.graph.instance_dict(parent)
            if attributes is not None and id(attributes) in wanted:
                edges.append(("__dict__", None, attributes))
        held = self._wanted(edges, wanted)
        if not held:
            # gc says it refers to them, through a reference the walk does not name (a class's
            # dict, a C-level object's fields): followed all the same, as such.
            try:
                referents = gc.get_referents(parent)
            except Exception:
                referents = []
            kind = "__dict__" if type in mro(type(parent)) else "referrer"
            held = self._wanted([(kind, None, child) for child in referents], wanted)
        return held

    def _wanted(self, edges: list, wanted: dict | None) -> list:
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
        exhaustive = True  # every referrer at every level followed
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
                    exhaustive = False
                    break
            del referrers, wanted
            frontier = upper
        self._place(start, None, None, None)
        self.unrooted[id(start)] = "no_root" if exhaustive and not frontier else "limit"
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
