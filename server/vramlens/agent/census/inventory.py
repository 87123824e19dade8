"""The tensors the census found, grouped by storage, and the role that claimed each storage.

A storage (the memory a tensor and all its views share, keyed by its device and ``data_ptr``)
belongs to exactly one role: the first that claims it, in the order the census asks them —
parameter, buffer, gradient, optimizer state, cache, frame local, held, unreached. So the
roles' bytes add up to the bytes of all storages found, each counted once.
"""

from __future__ import annotations

ROLES = ("parameter", "buffer", "gradient", "optimizer_state", "cache", "frame_local", "held", "unreached")


class Storage:
    __slots__ = ("ptr", "nbytes", "device", "tensors", "role", "owner")

    def __init__(self, ptr: int, nbytes: int, device: int):
        self.ptr, self.nbytes, self.device = ptr, nbytes, device
        self.tensors: list[int] = []
        self.role: str | None = None
        self.owner: int | None = None  # index of the entry in its role's table


class TensorFacts:
    __slots__ = ("shape", "dtype", "element_size", "offset", "requires_grad", "grad_fn", "leaf", "cls", "storage")

    def __init__(self, tensor, storage_key: tuple):
        self.shape = [int(size) for size in tensor.shape]
        self.dtype = str(tensor.dtype).replace("torch.", "", 1)
        self.element_size = int(tensor.element_size())
        self.offset = int(tensor.storage_offset())
        self.requires_grad = bool(tensor.requires_grad)
        grad_fn = tensor.grad_fn
        self.grad_fn = type(grad_fn).__name__ if grad_fn is not None else None
        self.leaf = bool(tensor.is_leaf)
        self.cls = None
        self.storage = storage_key


class Inventory:
    def __init__(self, device_filter):
        self.device_filter = device_filter
        self.objects: list = []  # the tensors themselves, kept alive while the census runs
        self.facts: list[TensorFacts] = []
        self.index_of: dict[int, int] = {}  # id(tensor) -> index
        self.storages: dict[tuple, Storage] = {}
        self.without_storage: dict[str, int] = {}  # class name -> tensors the filter took but that have no storage

    # -- finding ------------------------------------------------------------------------
    def add(self, tensor, class_name: str | None) -> None:
        if id(tensor) in self.index_of or not self.device_filter(tensor):
            return
        try:
            storage = tensor.untyped_storage()
            ptr, nbytes = int(storage.data_ptr()), int(storage.nbytes())
            if nbytes and not ptr:
                raise ValueError("no memory behind the storage")  # a fake or meta tensor's
            device = int(tensor.get_device())
            key = (device, ptr)
            facts = TensorFacts(tensor, key)
        except Exception:  # sparse, nested, wrapper subclasses: no storage of their own to count
            name = class_name or "torch.Tensor"
            self.without_storage[name] = self.without_storage.get(name, 0) + 1
            return
        facts.cls = class_name
        index = len(self.objects)
        self.objects.append(tensor)
        self.facts.append(facts)
        self.index_of[id(tensor)] = index
        found = self.storages.get(key)
        if found is None:
            found = self.storages[key] = Storage(ptr, nbytes, device)
        elif nbytes > found.nbytes:
            found.nbytes = nbytes
        found.tensors.append(index)

    def index(self, obj) -> int | None:
        """The index of a tensor the census found (None for anything else)."""
        index = self.index_of.get(id(obj))
        return index if index is not None and self.objects[index] is obj else None

    # -- claiming -----------------------------------------------------------------------
    def storage_of(self, index: int) -> Storage:
        return self.storages[self.facts[index].storage]

    def claimed(self, index: int) -> bool:
        return self.storage_of(index).role is not None

    def claim(self, index: int, role: str, owner: int | None) -> int:
        """Give the tensor's storage to ``role`` unless another role has it; the bytes newly claimed."""
        storage = self.storage_of(index)
        if storage.role is not None:
            return 0
        storage.role, storage.owner = role, owner
        return storage.nbytes

    def claim_in_order(self, entries: list, role: str) -> list:
        """Claim each entry's tensors in order (its ``tensors``, adding to its ``bytes``); the entries that got
        storages of their own, each owner numbered by its place among those kept."""
        kept = []
        for entry in entries:
            owner, claimed = len(kept), False
            for index in entry.tensors:
                if not self.claimed(index):
                    claimed = True
                    entry.bytes += self.claim(index, role, owner)
            if claimed:
                kept.append(entry)
        return kept

    def unclaimed(self) -> list[int]:
        return [index for index in range(len(self.facts)) if not self.claimed(index)]

    def total_bytes(self) -> int:
        return sum(storage.nbytes for storage in self.storages.values())
