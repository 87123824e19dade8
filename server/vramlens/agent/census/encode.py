"""The census as plain JSON data (documented in docs/capture-format.md, "census.json").

Tensors are listed individually up to a cap, the largest storages first; every table also
carries counts and bytes over everything found, so the totals stay exact when the listing
is cut. Tables refer to tensors by their position in ``tensors``, tensors to storages by
their position in ``storages``.
"""

from __future__ import annotations

from .graph import class_facts
from .holder_groups import path_text
from .inventory import ROLES


class Listing:
    """Which tensors and storages are listed, and where each one landed."""

    def __init__(self, inventory, max_tensors: int):
        self.tensor_at: dict[int, int] = {}
        self.storage_at: dict[tuple, int] = {}
        self.storage_keys: list[tuple] = []
        ordered = sorted(inventory.storages.items(), key=lambda item: item[1].nbytes, reverse=True)
        for key, storage in ordered:
            if len(self.tensor_at) >= max_tensors:
                break
            self.storage_at[key] = len(self.storage_keys)
            self.storage_keys.append(key)
            for index in storage.tensors:
                if len(self.tensor_at) >= max_tensors:
                    break
                self.tensor_at[index] = len(self.tensor_at)

    def ref(self, index: int) -> int | None:
        return self.tensor_at.get(index)

    def refs(self, indices) -> list[int]:
        return [self.tensor_at[index] for index in indices if index in self.tensor_at]


def _tensor(facts, storage_position: int) -> dict:
    record = {"storage": storage_position, "shape": facts.shape, "dtype": facts.dtype,
              "element_size": facts.element_size, "offset": facts.offset,
              "requires_grad": facts.requires_grad, "grad_fn": facts.grad_fn, "leaf": facts.leaf}
    if facts.cls is not None:
        record["class"] = facts.cls
    return record


def _group(listing: Listing, indices: list[int], claimed_bytes: int) -> dict:
    return {"count": len(indices), "bytes": claimed_bytes, "listed": listing.refs(indices)}


def _named(listing: Listing, entries, claimed_bytes: int) -> dict:
    listed = [{"name": entry.name, "tensor": listing.ref(entry.tensor)} for entry in entries
              if listing.ref(entry.tensor) is not None]
    return {"count": len(entries), "bytes": claimed_bytes, "listed": listed}


def tensors_and_storages(inventory, listing: Listing) -> tuple[list, list]:
    tensors = [None] * len(listing.tensor_at)
    for index, position in listing.tensor_at.items():
        facts = inventory.facts[index]
        tensors[position] = _tensor(facts, listing.storage_at[facts.storage])
    storages = []
    for key in listing.storage_keys:
        storage = inventory.storages[key]
        storages.append({"ptr": storage.ptr, "bytes": storage.nbytes, "device": storage.device,
                         "role": storage.role, "owner": storage.owner, "tensors": len(storage.tensors)})
    return tensors, storages


def summary(inventory, listing: Listing) -> dict:
    roles = {role: {"storages": 0, "bytes": 0} for role in ROLES}
    unlisted = {"tensors": len(inventory.facts) - len(listing.tensor_at), "storages": 0, "bytes": 0}
    for key, storage in inventory.storages.items():
        figures = roles[storage.role or "unreached"]
        figures["storages"] += 1
        figures["bytes"] += storage.nbytes
        if key not in listing.storage_at:
            unlisted["storages"] += 1
            unlisted["bytes"] += storage.nbytes
    totals = {"tensors": len(inventory.facts), "storages": len(inventory.storages), "bytes": inventory.total_bytes()}
    return {"totals": totals, "roles": roles, "unlisted": unlisted}


def modules(listing: Listing, roots, names: dict) -> list[dict]:
    return [dict(class_facts(root.cls), bound_to=names.get(id(root.module), []),
                 parameters=_named(listing, root.parameters, root.bytes["parameter"]),
                 buffers=_named(listing, root.buffers, root.bytes["buffer"]),
                 gradients=_named(listing, root.gradients, root.bytes["gradient"]),
                 aliases=root.aliases, other_device=root.other_device)
            for root in roots]


def optimizers(listing: Listing, entries, names: dict) -> list[dict]:
    found = []
    for entry in entries:
        listed = [{"tensor": listing.ref(state.tensor), "key": state.key, "param": state.param, "module": state.root}
                  for state in entry.state if listing.ref(state.tensor) is not None]
        found.append(dict(class_facts(entry.cls), bound_to=names.get(id(entry.optimizer), []),
                          params={"count": entry.param_count, "bytes": entry.param_bytes},
                          state={"count": len(entry.state), "bytes": entry.state_bytes,
                                 "by_key": entry.bytes_by_key, "listed": listed},
                          step=entry.step))
    return found


def caches(listing: Listing, entries, names: dict) -> list[dict]:
    found = []
    for entry in entries:
        module = {"root": entry.module_path[0], "path": entry.module_path[1]} if entry.module_path else None
        found.append(dict(class_facts(entry.cls), kind=entry.kind, bound_to=names.get(id(entry.cache), []),
                          module=module, tensors=_group(listing, entry.tensors, entry.bytes),
                          truncated=entry.truncated))
    return found


def frame_locals(listing: Listing, entries) -> list[dict]:
    return [dict(entry.where, name=entry.name, container=entry.container, length=entry.length,
                 tensors=_group(listing, entry.tensors, entry.bytes))
            for entry in entries]


def holders(listing: Listing, entries) -> list[dict]:
    found = []
    for holder in entries:
        found.append({"container": holder.container, "path": path_text(holder.chain) if holder.chain else None,
                      "chain": holder.chain, "names": holder.names, "found_by": holder.found_by,
                      "search": holder.search,
                      "tensors": _group(listing, holder.tensors, holder.bytes)})
    return found


def graphs(listing: Listing, facts: dict) -> dict:
    """The graph walk's table, each Python-visible storage also by its position in ``storages``."""
    for storage in facts["storages"]:
        storage["storage"] = listing.storage_at.get((storage["device"], storage["ptr"]))
    return facts


def empty_tables() -> dict:
    """The tables of a census that found nothing (or failed before listing what it found)."""
    return {"totals": {"tensors": 0, "storages": 0, "bytes": 0},
            "roles": {role: {"storages": 0, "bytes": 0} for role in ROLES},
            "unlisted": {"tensors": 0, "storages": 0, "bytes": 0},
            "tensors": [], "storages": [], "modules": [], "optimizers": [], "caches": [], "frame_locals": [],
            "holders": [], "unreached": {"storages": 0, "bytes": 0, "tensors": {"count": 0, "listed": []}}}


def unreached(listing: Listing, inventory, indices: list[int]) -> dict:
    storages = {inventory.facts[index].storage for index in indices}
    return {"storages": len(storages), "bytes": sum(inventory.storages[key].nbytes for key in storages),
            "tensors": {"count": len(indices), "listed": listing.refs(indices)}}
