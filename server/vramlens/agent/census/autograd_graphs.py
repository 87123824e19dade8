"""What the autograd graphs of the census' tensors keep alive: the tensors their nodes saved for backward.

A tensor with a ``grad_fn`` keeps its whole graph: every node reachable through ``next_functions``
and the tensors each node saved. Those saved tensors usually have no holder a person can name
(no Python object refers to them), so without this walk their bytes land in "other" or in nobody's
column. The walk starts from the tensors of each owner the census found (a holder, a frame local,
a cache, and last the tensors no holder was found for), follows the graph, and records which
storages each owner's graphs reach; a storage reached from several owners is listed once, with
all of them.

Nothing of the program runs and nothing changes:
  * saved tensors are read through ``SavedTensor.data`` and ``SavedTensor.unpack_hook`` (properties
    of torch's binding), never through ``_saved_*`` — which *unpacks* and so would call a saved-tensor
    hook's unpack (gradient checkpointing's recomputation, an offload's copy back to the device);
  * a tensor saved under hooks is counted only when what the pack hook kept is itself a tensor (kept
    as it was); anything else (a checkpoint's placeholder, a CPU copy, a file name) keeps no device
    memory through the graph and is counted as ``hooked``;
  * a saved tensor freed by a backward pass that ran (no ``retain_graph``), or a slot the node left
    unused, reads as None: ``empty``;
  * every attribute is read through the C-level descriptor of torch's own classes, never through
    a class's Python attributes, so a custom ``autograd.Function`` runs none of its code;
  * the walk keeps its nodes and tensors only while it runs.
A torch whose binding lacks those two properties cannot tell a hooked saved tensor from a plain one
without unpacking it, so there the saved tensors are not read at all: the walk only joins the
tensors the census saw without a holder to the graphs containing the node that produced them
(``mechanism: "producer"``), and says so.

Reading a saved tensor gives it a Python wrapper, which torch keeps alongside the C++ tensor for as
long as the graph keeps it (a few hundred bytes of host memory each); a later census sees those
wrappers as tensors without a holder, and this walk charges them to their graph again.
"""

from __future__ import annotations

import types

from .graph import is_a, mro

NODES = 200_000  # graph nodes visited over all owners
STORAGES_LISTED = 20_000  # storages listed in the table (the largest); the totals cover all
PER_OWNER_LISTED = 2_000  # storage positions listed per owner (its largest)
TIME_LIMIT = 2.0  # the walk may run until this many census budgets have passed since the census began
OWNER_ORDER = ("held", "cache", "frame_local", "unreached")  # who is asked first; each storage lists all its owners
NOT_CHARGED = ("parameter", "buffer", "gradient", "optimizer_state")  # saved weights are the model's, not the graph's

_C_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)


class _Stop(Exception):
    pass


def _c_descriptor(cls, name: str):
    """The C-level getter of ``name`` on a class (None when missing, or when Python code defines it)."""
    for klass in mro(cls):
        found = klass.__dict__.get(name)
        if found is not None:
            return found if type(found) in _C_DESCRIPTORS else None
    return None


class _SavedReader:
    """How to read one of torch's SavedTensor objects without unpacking it."""

    def __init__(self, torch):
        autograd = getattr(getattr(torch, "_C", None), "_autograd", None)
        saved_type = getattr(autograd, "SavedTensor", None)
        members = saved_type.__dict__ if saved_type is not None else {}
        self.saved_type = saved_type
        self.data = members.get("data")
        self.unpack_hook = members.get("unpack_hook")
        # pybind properties: a property whose getter is torch's compiled function, never Python code
        self.usable = all(type(prop) is property and not isinstance(prop.fget, types.FunctionType)
                          for prop in (self.data, self.unpack_hook))

    def read(self, saved):
        """(hooked, packed or data). Raises when the object cannot be read."""
        hook = self.unpack_hook.__get__(saved)
        return hook is not None, self.data.__get__(saved)


class NodeReader:
    """One autograd node's inputs and what it keeps for backward, read as this walk reads them (C-level
    descriptors, ``SavedTensor.data``): for a walker of its own, such as the kernel's holders."""

    def __init__(self, torch):
        self.reader = _SavedReader(torch)
        self.tensor_type = getattr(torch, "Tensor", None)
        self._saved_names: dict = {}  # node type -> its _raw_saved_* descriptors

    def is_node(self, obj) -> bool:
        return _c_descriptor(type(obj), "next_functions") is not None

    def next_nodes(self, node) -> list:
        getter = _c_descriptor(type(node), "next_functions")
        try:
            edges = getter.__get__(node, type(node)) if getter is not None else ()
        except Exception:
            return []
        return [edge[0] for edge in edges if type(edge) is tuple and edge and edge[0] is not None]

    def kept(self, node) -> list:
        """What the node saved (a hooked saved tensor only when its pack hook kept a tensor), and a custom
        Function's ctx attributes; nothing saved where this torch cannot read a SavedTensor unpacked."""
        found = []
        cls = type(node)
        if self.reader.usable:
            for getter in self.descriptors(cls):
                try:
                    value = getter.__get__(node, cls)
                except Exception:
                    continue
                for item in value if type(value) in (list, tuple) else (value,):
                    if type(item) is not self.reader.saved_type:
                        continue
                    try:
                        hooked, data = self.reader.read(item)
                    except Exception:
                        continue
                    if data is not None and (not hooked or is_a(data, self.tensor_type)):
                        found.append(data)
        attributes = _instance_dict(node)
        if attributes is not None:
            for value in dict.values(attributes):
                found.extend(value if type(value) in (list, tuple) else (value,))
        return found

    def descriptors(self, cls) -> tuple:
        """The C-level getters of the node type's ``_raw_saved_*`` slots (SavedTensor objects, not unpacked)."""
        found = self._saved_names.get(cls)
        if found is None:
            names = [name for name in type.__dir__(cls) if type(name) is str and name.startswith("_raw_saved_")]
            found = tuple(getter for name in names if (getter := _c_descriptor(cls, name)) is not None)
            self._saved_names[cls] = found
        return found


class GraphWalk:
    def __init__(self, torch, inventory, budget, device_filter):
        self.torch, self.inventory, self.budget, self.device_filter = torch, inventory, budget, device_filter
        self.tensor_type = getattr(torch, "Tensor", None)
        self.node_reader = NodeReader(torch)
        self.reader = self.node_reader.reader
        self.mechanism = "saved_tensor_data" if self.reader.usable else "producer"
        self._node_saved: dict[int, tuple] = {}  # id(node) -> storage keys it saved
        self._node_sizes: dict[tuple, int] = {}  # storage key -> bytes
        self._keep: list = []  # nodes and tensors, alive while the walk runs so that ids stay theirs
        self._walked: set[int] = set()  # id(node) of every node walked, by any owner
        self._node_owners: dict[int, list[int]] = {}  # id(node) -> owner positions (producer mechanism)
        self.nodes = self.saved = self.hooked = self.hooked_kept = self.empty = self.unreadable = 0
        self.cut: str | None = None

    # -- one owner's graphs ---------------------------------------------------------------
    def reach(self, roots: list, position: int = 0) -> tuple[set, int, dict]:
        """The storage keys the graphs of ``roots`` (tensors) keep, the nodes walked (noted under
        ``position``, the owner's, for the producer mechanism), and how many nodes lead to each leaf's
        gradient accumulator (id -> count)."""
        found: set = set()
        leaves: dict = {}
        seen: set[int] = set()
        stack = []
        for tensor in roots:
            node = _grad_fn(tensor)
            if node is not None:
                stack.append(node)
        walked = 0
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            self._keep.append(node)
            self._walked.add(id(node))
            if self.mechanism == "producer":
                self._node_owners.setdefault(id(node), []).append(position)
            walked += 1
            self.nodes += 1
            if self.nodes >= NODES:
                self.cut = "nodes"
                raise _Stop
            if not self.nodes & 255 and self.budget.elapsed() > self.budget.seconds * TIME_LIMIT:
                self.cut = "time"
                raise _Stop
            keys = self._node_saved.get(id(node))
            if keys is None:
                keys = self._node_saved[id(node)] = tuple(self._saved_by(node))
            found.update(keys)
            for child in self._next(node):
                if child is None:
                    continue
                if type(child).__name__ == "AccumulateGrad":
                    leaves[id(child)] = leaves.get(id(child), 0) + 1
                if id(child) not in seen:
                    stack.append(child)
        return found, walked, leaves

    def _next(self, node) -> list:
        return self.node_reader.next_nodes(node)

    def _saved_by(self, node):
        """The storage keys of the device tensors a node saved (none under the producer mechanism)."""
        cls = type(node)
        if self.mechanism != "saved_tensor_data":
            return
        for getter in self.node_reader.descriptors(cls):
            try:
                value = getter.__get__(node, cls)
            except Exception:
                self.unreadable += 1
                continue
            items = value if type(value) in (list, tuple) else (value,)
            for item in items:
                if self.reader.saved_type is not None and type(item) is self.reader.saved_type:
                    key = self._saved_key(item)
                    if key is not None:
                        yield key
        attributes = _instance_dict(node)  # a custom Function's ctx: tensors kept as attributes (ctx.mask = …)
        if attributes is not None:
            for value in dict.values(attributes):
                for item in (value if type(value) in (list, tuple) else (value,)):
                    key = self._tensor_key(item)
                    if key is not None:
                        yield key

    def _saved_key(self, saved):
        self.saved += 1
        try:
            hooked, data = self.reader.read(saved)
        except Exception:
            self.unreadable += 1
            return None
        if data is None:
            if not hooked:
                self.empty += 1  # freed by a backward pass, or never saved (an optional input)
            return None
        if hooked:
            key = self._tensor_key(data)
            if key is None:
                self.hooked += 1  # recomputed, offloaded or packed otherwise: no device memory through the graph
            else:
                self.hooked_kept += 1
            return key
        return self._tensor_key(data)

    def _tensor_key(self, value):
        if self.tensor_type is None or not is_a(value, self.tensor_type):
            return None
        try:
            if not self.device_filter(value):
                return None
            storage = value.untyped_storage()
            ptr, nbytes = int(storage.data_ptr()), int(storage.nbytes())
            key = (int(value.get_device()), ptr)
        except Exception:
            return None
        if not ptr:
            return None
        self._keep.append(value)
        if nbytes > self._node_sizes.get(key, 0):
            self._node_sizes[key] = nbytes
        return key

    # -- every owner -----------------------------------------------------------------------
    def run(self, owners: list[tuple[tuple, list]]) -> dict:
        """``owners``: [((role, owner), [inventory index…])] with tensors that have a graph, in order."""
        reached: list[tuple[tuple, int, set, int]] = []
        try:
            for owner, indices in owners:
                roots = [self.inventory.objects[index] for index in indices]
                if owner[0] == "unreached":
                    # a tensor without a holder whose node an owner's graph contains is part of that graph
                    # (a saved activation that had a Python wrapper), not a graph of its own
                    produced = [(tensor, _grad_fn(tensor)) for tensor in roots]  # nodes alive: their ids stay theirs
                    roots = [tensor for tensor, node in produced if id(node) not in self._walked]
                    del produced
                keys, walked, leaves = self.reach(roots, len(reached))
                count = len(roots)
                del roots
                if count:
                    reached.append((owner, count, keys, walked, _median(leaves.values())))
            if self.mechanism == "producer":
                self._producers(reached)
        except _Stop:
            pass
        finally:
            self._node_saved.clear()
            self._node_owners.clear()
            self._walked.clear()
            self._keep.clear()
        return self._facts(reached, len(owners))

    def _producers(self, reached: list) -> None:
        """Without reading saved tensors: a tensor no holder keeps, whose producing node is in an owner's
        graph, is kept by that graph (as a node's saved output or a later node's saved input)."""
        inventory = self.inventory
        for index, facts in enumerate(inventory.facts):
            if facts.grad_fn is None or inventory.storage_of(index).role != "unreached":
                continue
            node = _grad_fn(inventory.objects[index])
            if node is None:
                continue
            for position in self._node_owners.get(id(node), ()):
                reached[position][2].add(facts.storage)

    def _facts(self, reached: list, asked: int) -> dict:
        inventory = self.inventory
        owners_of: dict[tuple, list[int]] = {}
        for position, (_owner, _count, keys, _walked, _passes) in enumerate(reached):
            for key in keys:
                storage = inventory.storages.get(key)
                if storage is not None and storage.role not in ("unreached", None):
                    continue  # charged to its own owner already (a parameter, another holder's tensor)
                owners_of.setdefault(key, []).append(position)
        sizes = {key: self._size(key) for key in owners_of}
        ordered = sorted(owners_of, key=lambda key: -sizes[key])
        listed = ordered[:STORAGES_LISTED]
        position_of = {key: position for position, key in enumerate(listed)}
        storages = []
        for key in listed:
            storage = inventory.storages.get(key)
            storages.append({"ptr": key[1], "device": key[0], "bytes": sizes[key],
                             "python_visible": storage is not None, "owners": owners_of[key][:16],
                             "shared": len(owners_of[key]) > 1})
        groups = []
        for position, (owner, count, keys, walked, passes) in enumerate(reached):
            mine = [key for key in keys if key in owners_of]
            mine.sort(key=lambda key: -sizes[key])
            exclusive = sum(sizes[key] for key in mine if len(owners_of[key]) == 1)
            also_named = sum(1 for key in keys if key not in owners_of)
            groups.append({"role": owner[0], "owner": owner[1], "roots": count, "nodes": walked, "passes": passes,
                           "storages": len(mine), "bytes": sum(sizes[key] for key in mine),
                           "exclusive_bytes": exclusive,
                           "python_visible_bytes": sum(sizes[key] for key in mine if key in inventory.storages),
                           "named_elsewhere": also_named,
                           "listed": [position_of[key] for key in mine[:PER_OWNER_LISTED] if key in position_of]})
        unlisted = ordered[STORAGES_LISTED:]
        return {"mechanism": self.mechanism, "owners": groups, "storages": storages,
                "totals": {"storages": len(ordered), "bytes": sum(sizes.values()),
                           "not_python_visible_bytes": sum(sizes[key] for key in ordered if key not in inventory.storages)},
                "unlisted": {"storages": len(unlisted), "bytes": sum(sizes[key] for key in unlisted)},
                "owners_asked": asked, "owners_walked": len(reached), "nodes": self.nodes, "saved": self.saved,
                "hooked": self.hooked, "hooked_kept": self.hooked_kept, "empty": self.empty,
                "unreadable": self.unreadable, "cut": self.cut}

    def _size(self, key) -> int:
        storage = self.inventory.storages.get(key)
        if storage is not None:
            return storage.nbytes
        return self._node_sizes.get(key, 0)


def _median(counts) -> int:
    """How many forward passes a graph holds: the median number of nodes leading to one leaf's gradient
    accumulator (a weight is used once per forward pass in most models; a sum of N losses holds N passes)."""
    ordered = sorted(counts)
    return ordered[len(ordered) // 2] if ordered else 0


def _grad_fn(tensor):
    try:
        return tensor.grad_fn
    except Exception:
        return None


def _instance_dict(node):
    """A custom Function node's ``__dict__`` (its ctx attributes), through the C-level descriptor."""
    for klass in mro(type(node)):
        found = klass.__dict__.get("__dict__")
        if found is not None:
            if type(found) is not types.GetSetDescriptorType:
                return None
            try:
                attributes = found.__get__(node, type(node))
            except Exception:
                return None
            return attributes if type(attributes) is dict else None
    return None


def owners_with_graphs(inventory) -> list[tuple[tuple, list]]:
    """((role, owner), [inventory index…]) of the tensors that carry a graph, grouped by the owner of their
    storage, in OWNER_ORDER (the tensors no holder was found for all together, last)."""
    grouped: dict[tuple, list[int]] = {}
    for index, facts in enumerate(inventory.facts):
        if facts.grad_fn is None:
            continue
        storage = inventory.storage_of(index)
        if storage.role not in OWNER_ORDER:
            continue
        owner = (storage.role, storage.owner if storage.role != "unreached" else None)
        grouped.setdefault(owner, []).append(index)
    return sorted(grouped.items(), key=lambda item: (OWNER_ORDER.index(item[0][0]), item[0][1] or 0))


def inside_claimed_graphs(torch, inventory, budget, device_filter) -> set[int]:
    """The unclaimed tensors that the graphs of the tensors already claimed (frame locals, caches) contain:
    saved activations that kept a Python wrapper. No Python object refers to them, so the holder search
    would look for them in vain and spend its budget; they are left to the graph walk instead."""
    roots = [index for index, facts in enumerate(inventory.facts)
             if facts.grad_fn is not None and inventory.storage_of(index).role in ("frame_local", "cache")]
    if not roots:
        return set()
    walk = GraphWalk(torch, inventory, budget, device_filter)
    try:
        keys, _walked, _leaves = walk.reach([inventory.objects[index] for index in roots])
        nodes = walk._walked
        inside = set()
        for index, facts in enumerate(inventory.facts):
            if inventory.claimed(index):
                continue
            if facts.storage in keys:
                inside.add(index)
            elif facts.grad_fn is not None:
                node = _grad_fn(inventory.objects[index])
                if node is not None and id(node) in nodes:
                    inside.add(index)
                del node
        return inside
    except _Stop:
        return set()
    finally:
        walk._keep.clear()
        walk._walked.clear()
        walk._node_saved.clear()


def walk_graphs(torch, inventory, budget, device_filter) -> dict:
    """The ``graphs`` table of the census (docs/capture-format.md, census.json)."""
    owners = owners_with_graphs(inventory)
    walk = GraphWalk(torch, inventory, budget, device_filter)
    if not owners:
        return walk._facts([], 0)
    return walk.run(owners)
