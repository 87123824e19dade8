"""What the memory is and who holds it: the census (taken inside the process at the moment) joined
to the snapshot's live blocks.

Each storage the census found is matched to the live block at its address, so every role counts
the allocator's own block sizes and the roles add up to what was allocated; what no Python object
holds — activations saved for backward, autograd temporaries, tensors only C++ keeps — is the
remainder, stated as such and never hidden.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field

from vramlens.analysis.attribution.library_tree import frame_label
from vramlens.analysis.load.snapshot import ALLOCATED, block_frames, block_state
from vramlens.analysis.load.sources import SourceResolver, place_of
from vramlens.analysis.model import Holder, RoleShare
from vramlens.analysis.replay.trace import frames_key
from vramlens.units import format_bytes as fmt

# census role -> (analysis role, words)
ROLE_NAMES = {
    "parameter": ("parameters", "parameters"),
    "buffer": ("buffers", "buffers"),
    "gradient": ("gradients", "gradients"),
    "optimizer_state": ("optimizer_state", "optimizer state"),
    "cache": ("kv_cache", "KV cache and library caches"),
    "frame_local": ("inputs", "tensors in the code's local variables (inputs, batches, outputs)"),
    "held": ("held_by_python", "held by Python objects"),
    "unreached": ("other", "other tensors Python can see"),
}
ACTIVATIONS = ("activations", "not held by any Python object: activations saved for backward and temporaries")
ORDER = ("activations", "parameters", "gradients", "optimizer_state", "kv_cache", "held_by_python", "kept_graphs",
         "inputs", "buffers", "other")
KEPT_GRAPHS = "saved activations kept by the autograd graphs of held tensors"
SAVED_WORDS = "activations saved for backward (autograd graphs no Python object names)"
# ...and what they are when autograd was off at the moment: no graph saves anything, so the tensors no Python
# object names are the intermediates of the pass in progress (a layer's input and output while it runs)
TEMPORARY_WORDS = "intermediates of the pass in progress (autograd off; no Python object names them)"
# The frames of a backward pass in progress (torch.autograd's own functions on the main thread's stack).
_BACKWARD_FRAMES = {"_engine_run_backward", "run_backward"}
# Leaf layers and containers: the activations they allocate belong to the module that called them.
_LEAF_MODULE_FILES = ("linear.py", "activation.py", "normalization.py", "dropout.py", "conv.py", "sparse.py",
                      "container.py", "pooling.py", "batchnorm.py", "flatten.py")


@dataclass
class Census:
    """The census joined to the blocks: bytes per role and per owner, and each block's role."""

    moment: str
    roles: list[RoleShare]
    holders: list[Holder]
    blocks_by_role: dict = field(default_factory=dict)  # analysis role -> [(address, size, frames)]
    grad_enabled: bool | None = None
    inference_mode: bool | None = None
    main_stack: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    optimizer_bytes: int = 0
    parameter_bytes: int = 0
    pending_state: int = 0  # optimizer state still to be created in this step (its first step was under way)
    pending_words: str | None = None


def live_blocks(segments: list[dict], live: dict | None = None, trace: list | None = None) -> list[tuple[int, int, list]]:
    """(address, size, frames) of every block live at the moment, by address: the snapshot's allocated
    blocks, and the blocks the trace replay holds live (``live``: addr -> (size, accumulator, trace
    index)) that the segments do not list."""
    blocks = {}
    for segment in segments:
        for block in segment.get("blocks") or ():
            if block_state(block) == ALLOCATED:
                blocks[block.get("address", 0)] = (block.get("address", 0), block.get("size", 0), block_frames(block))
    for address, (size, _acc, index) in (live or {}).items():
        if address not in blocks:
            frames = trace[index].get("frames") if trace is not None and index < len(trace) else None
            blocks[address] = (address, size, frames or [])
    return sorted(blocks.values(), key=lambda block: block[0])


def _block_at(blocks: list, starts: list[int], ptr: int) -> int | None:
    position = bisect.bisect_right(starts, ptr) - 1
    if position >= 0:
        address, size, _ = blocks[position]
        if address <= ptr < address + size:
            return position
    return None


def _class_label(entry: dict) -> str:
    return str(entry.get("class") or "?").rsplit(".", 1)[-1]


def _model_words(census: dict) -> str | None:
    modules = [m for m in census.get("modules") or () if m["parameters"]["bytes"]]
    if not modules:
        return None
    modules.sort(key=lambda m: -m["parameters"]["bytes"])
    words = []
    for module in modules[:2]:
        count = module["parameters"]["count"]
        numel = _numel(census, [item["tensor"] for item in module["parameters"]["listed"]])
        size = f"{numel / 1e6:.1f}M parameters" if numel and len(module["parameters"]["listed"]) == count else f"{count} tensors"
        words.append(f"{_class_label(module)}: {size}")
    return ", ".join(words)


def _numel(census: dict, tensor_indices: list[int]) -> int:
    total = 0
    for index in tensor_indices:
        shape = census["tensors"][index]["shape"]
        count = 1
        for size in shape:
            count *= size
        total += count
    return total


def _optimizer_words(census: dict) -> str | None:
    found = census.get("optimizers") or []
    if not found:
        return None
    parts = []
    for entry in found[:2]:
        keys = ", ".join(key for key, _ in sorted(entry["state"]["by_key"].items(), key=lambda kv: -kv[1])[:3])
        parts.append(f"{_class_label(entry)}: {keys}" if keys else _class_label(entry))
    return "; ".join(parts)


def join_census(census: dict, segments: list[dict] | None, allocated: int | None, resolver: SourceResolver,
                device: int | None = None, live: dict | None = None, trace: list | None = None,
                frame_names: dict | None = None, name_saved: bool | None = None) -> Census:
    """``segments`` (and ``live``, the replay's live blocks, with the ``trace`` they index): the
    state at the census' moment, when the snapshot was taken then (else None: the census' own
    storage sizes are used, against the allocated bytes it recorded). ``frame_names``: capture.json's,
    to name the modules whose forward saved the activations. ``name_saved`` False: tensors without a
    holder stay "other" (the roles as they were before the graphs were read; for the benchmark); None: NAME_SAVED."""
    name_saved = NAME_SAVED if name_saved is None else name_saved
    if segments is None:
        return _unjoined(census, resolver, name_saved)
    blocks = live_blocks(segments, live, trace)
    if not blocks:
        return _unjoined(census, resolver, name_saved)
    starts = [block[0] for block in blocks]
    claimed: set[int] = set()
    role_bytes: Counter = Counter()
    role_blocks: dict = {}
    owner_bytes: Counter = Counter()  # (census role, owner) -> bytes
    owner_lines: dict = {}  # (census role, owner) -> Counter of allocating lines
    other_at: dict[int, int] = {}  # block position -> census storage index, for the tensors no holder was found for
    unmatched = 0
    for storage_index, storage in enumerate(census["storages"]):
        if device is not None and storage["device"] not in (device, -1):
            continue
        position = _block_at(blocks, starts, storage["ptr"])
        role, _words = ROLE_NAMES[storage["role"]]
        if position is None:
            unmatched += storage["bytes"]
            continue
        if position in claimed:
            continue  # two storages in one block (sub-allocations): the block counts once
        claimed.add(position)
        if storage["role"] == "unreached":
            other_at[position] = storage_index
        address, size, frames = blocks[position]
        role_bytes[role] += size
        role_blocks.setdefault(role, []).append(blocks[position])
        owner = (storage["role"], storage.get("owner"))
        owner_bytes[owner] += size
        key = frames_key(frames, resolver) if frames else None
        if key and key[0] is not None:
            owner_lines.setdefault(owner, Counter())[key] += size
    remainder = allocated - sum(role_bytes.values())
    notes = list(census.get("notes") or [])
    if unmatched:
        notes.append(f"{fmt(unmatched)} of tensors the census found had no live block in the snapshot (they were "
                     "freed between the two, or live on another device).")
    if remainder < 0:
        notes.append(f"The census' tensors covered {fmt(-remainder)} more than the allocator counted; the remainder "
                     "is taken as 0.")
        remainder = 0
    holders, holder_at = _holders(census, owner_bytes, owner_lines, resolver)
    for owner, holder in holder_at.items():
        holder.kept_lines = Counter(owner_lines.get(owner, {}))
    kept_blocks: list = []
    if name_saved:
        graphs = _graph_facts(census)
        by_position = _graph_blocks(graphs, blocks, starts) if graphs else {}
        saved_storages = _storages_with_graph(census)
        backward = _backward_in_progress(census)
        for position, storage_index in other_at.items():
            owner = by_position.get(position)
            if owner is None and storage_index not in saved_storages and not backward:
                continue  # nothing says what keeps it: it stays "other"
            size = blocks[position][1]
            role_bytes["other"] -= size
            role_blocks["other"].remove(blocks[position])
            if owner is not None and owner in holder_at and _is_collection(graphs, owner):
                _keep_graph_block(holder_at[owner], blocks[position], resolver)
                role_bytes["kept_graphs"] += size
                kept_blocks.append(blocks[position])
            else:
                claimed.discard(position)  # an activation saved for backward: with the remainder
                remainder += size
        for position, owner in by_position.items():
            if position in claimed or owner not in holder_at or not _is_collection(graphs, owner):
                continue
            size = blocks[position][1]  # no Python object names it: only the holder's graphs keep it
            claimed.add(position)
            _keep_graph_block(holder_at[owner], blocks[position], resolver)
            role_bytes["kept_graphs"] += size
            remainder -= size
            kept_blocks.append(blocks[position])
    else:
        graphs = None
    activation_blocks = [block for position, block in enumerate(blocks) if position not in claimed]
    if not _graphs_read(graphs):  # without the census' graph walk: the kept graphs by the line that made them
        kept = _graphs_behind(holders, {"activations": activation_blocks, "other": role_blocks.get("other", [])}, resolver)
        for role, size in kept.items():  # what held graphs keep is theirs, not anonymous activations
            if role == "activations":
                remainder -= size
            else:
                role_bytes[role] -= size
            role_bytes["kept_graphs"] += size
    roles = _shares(census, role_bytes, remainder,
                    _saved_by_module(activation_blocks, frame_names) if name_saved and remainder > 0 else None)
    if kept_blocks:
        role_blocks["kept_graphs"] = kept_blocks
    holders.sort(key=lambda holder: -(holder.bytes + holder.graph_bytes))
    grad = census.get("grad_mode") or {}
    result = Census(moment=census["moment"], roles=roles, holders=holders,
                    blocks_by_role=dict(role_blocks, activations=activation_blocks),
                    grad_enabled=grad.get("grad_enabled"), inference_mode=grad.get("inference_mode"),
                    main_stack=list(census.get("main_stack") or []), notes=notes,
                    optimizer_bytes=role_bytes["optimizer_state"], parameter_bytes=role_bytes["parameters"])
    if not census.get("complete", True):
        result.notes.append("The census was cut short by its time budget: " + "; ".join(census.get("skipped") or ()))
    result.pending_state, result.pending_words = pending_optimizer_state(census)
    return result


def pending_optimizer_state(census: dict) -> tuple[int, str | None]:
    """Bytes of optimizer state the step was still going to create. An element-wise state (Adam's
    exp_avg, exp_avg_sq; SGD's momentum buffer) takes the size of the parameters once complete; a
    key with more than a tenth but less than all of that was being filled when the census was taken."""
    pending, words = 0, None
    for entry in census.get("optimizers") or ():
        params = entry["params"]["bytes"]
        if not params:
            continue
        partial = {key: size for key, size in entry["state"]["by_key"].items() if 0.1 * params < size < 0.99 * params}
        if not partial:
            continue
        missing = sum(params - size for size in partial.values())
        pending += missing
        keys = ", ".join(sorted(entry["state"]["by_key"]))
        words = (f"{_class_label(entry)} was creating its state ({keys}): {fmt(entry['state']['bytes'])} existed of the "
                 f"{fmt(entry['state']['bytes'] + missing)} it needs for {fmt(params)} of parameters")
    return pending, words


def _shares(census: dict, role_bytes: Counter, remainder: int, saved_detail: str | None = None) -> list[RoleShare]:
    details = {"parameters": _model_words(census), "optimizer_state": _optimizer_words(census)}
    grad = census.get("grad_mode") or {}
    autograd_off = grad.get("grad_enabled") is False or grad.get("inference_mode") is True
    if saved_detail:
        words = TEMPORARY_WORDS if autograd_off else SAVED_WORDS
        shares = [RoleShare(ACTIVATIONS[0], remainder, f"{words} ({saved_detail})", saved_detail)] if remainder else []
    else:
        shares = [RoleShare(ACTIVATIONS[0], remainder, ACTIVATIONS[1])] if remainder else []
    for census_role, (role, words) in ROLE_NAMES.items():
        if role_bytes[role] > 0:
            detail = details.get(role)
            shares.append(RoleShare(role, role_bytes[role], f"{words} ({detail})" if detail else words, detail))
    if role_bytes["kept_graphs"] > 0:
        shares.append(RoleShare("kept_graphs", role_bytes["kept_graphs"], KEPT_GRAPHS))
    shares.sort(key=lambda share: (-share.bytes, ORDER.index(share.role)))
    return shares


def _holder_kind(container: dict) -> str:
    kind = container.get("kind") or "object"
    return kind if kind in ("list", "dict", "tuple", "attribute", "frame", "traceback", "set", "deque") else kind


def _signature(census: dict, indices) -> Counter:
    """(shape, dtype) -> bytes of the listed tensors: what a copy of the same weights would share."""
    found: Counter = Counter()
    for index in indices:
        tensor = census["tensors"][index]
        numel = 1
        for size in tensor["shape"]:
            numel *= size
        found[(tuple(tensor["shape"]), tensor["dtype"])] += numel * tensor["element_size"]
    return found


def _copy_of(census: dict, indices: list[int], models: list[tuple[str, Counter]]) -> str | None:
    """The model whose parameters a held group of tensors repeats, shape for shape (a state dict
    loaded beside the model), when they cover most of both."""
    held = _signature(census, indices)
    total = sum(held.values())
    for name, params in models:
        overlap = sum(min(size, params[key]) for key, size in held.items() if key in params)
        if total and overlap >= 0.5 * total and overlap >= 0.5 * sum(params.values()):
            return name
    return None


def _filled_at(owner_lines: dict, owner: tuple) -> tuple | None:
    """The line that allocated most of what an owner holds."""
    lines = owner_lines.get(owner)
    return lines.most_common(1)[0][0] if lines else None


def _with_graph(census: dict, listed: list[int]) -> int | None:
    """How many of the listed tensors carry an autograd graph (None: the census listed none)."""
    if not listed:
        return None
    return sum(1 for index in listed if census["tensors"][index]["grad_fn"] is not None)


def _item_numel(census: dict, listed: list[int], count: int) -> int | None:
    """The most elements one of the tensors has, when the census listed every one (else unknown)."""
    if not listed or len(listed) != count:
        return None
    return max(_numel(census, [index]) for index in listed)


def _holders(census: dict, owner_bytes: Counter, owner_lines: dict, resolver: SourceResolver | None) -> list[Holder]:
    cells = resolver.cells if resolver is not None else None
    models = [(_class_label(module), _signature(census, [item["tensor"] for item in module["parameters"]["listed"]]))
              for module in census.get("modules") or () if module["parameters"]["listed"]]
    found = []
    at: dict = {}  # (census role, owner) -> Holder
    graph_owners = {(owner["role"], owner.get("owner")) for owner in (_graph_facts(census) or {}).get("owners", ())}
    for index, entry in enumerate(census.get("holders") or []):
        size = owner_bytes[("held", index)]
        if not size and ("held", index) not in graph_owners:
            continue
        container = entry["container"]
        chain = [_step_text(step) for step in entry.get("chain") or ()]
        root = entry.get("path") or (", ".join(str(name) for name in entry["names"][:2]) if entry["names"] else None)
        listed = entry["tensors"]["listed"]
        found.append(Holder(root=root or container.get("type") or container.get("kind") or "?", named=bool(root),
                            kind=_holder_kind(container), bytes=size, tensors=entry["tensors"]["count"],
                            length=container.get("length"), appended_at=_filled_at(owner_lines, ("held", index)),
                            chain=chain, with_graph=_with_graph(census, listed), copy_of=_copy_of(census, listed, models),
                            item_numel=_item_numel(census, listed, entry["tensors"]["count"])))
        at[("held", index)] = found[-1]
    for index, entry in enumerate(census.get("frame_locals") or []):
        size = owner_bytes[("frame_local", index)]
        if not size and ("frame_local", index) not in graph_owners:
            continue
        where = place_of(str(entry["filename"]), entry.get("line"), cells)  # a cell by its place, not its temp file
        listed = entry["tensors"]["listed"]
        found.append(Holder(root=f"local {entry['name']} in {entry['function']} ({where})", kind="frame", bytes=size,
                            tensors=entry["tensors"]["count"], length=entry.get("length"),
                            created_at=(entry["filename"], entry.get("line")) if entry.get("line") else None,
                            appended_at=_filled_at(owner_lines, ("frame_local", index)),
                            with_graph=_with_graph(census, listed), copy_of=_copy_of(census, listed, models),
                            item_numel=_item_numel(census, listed, entry["tensors"]["count"])))
        at[("frame_local", index)] = found[-1]
    for index, entry in enumerate(census.get("caches") or []):
        size = owner_bytes[("cache", index)]
        if size:
            bound = (entry.get("bound_to") or [None])[0]
            found.append(Holder(root=f"{_class_label(entry)}" + (f" ({bound})" if bound else ""), kind="cache",
                                bytes=size, tensors=entry["tensors"]["count"]))
            at[("cache", index)] = found[-1]
    found.sort(key=lambda holder: -holder.bytes)
    return found, at


def _keep_graph_block(holder: Holder, block: tuple, resolver: SourceResolver) -> None:
    """A block only the holder's graphs keep: its bytes, by the line that allocated it (the forward that
    saved it, not the line that stored the graph's root)."""
    _address, size, frames = block
    holder.graph_bytes += size
    key = frames_key(frames, resolver) if frames else None
    if key and key[0] is not None:
        holder.kept_lines[key] = holder.kept_lines.get(key, 0) + size


def _graph_facts(census: dict) -> dict | None:
    graphs = census.get("graphs")
    return graphs if isinstance(graphs, dict) and graphs.get("owners") is not None else None


def _graphs_read(graphs: dict | None) -> bool:
    """Whether the census read the saved tensors of every graph (then they, not the allocating line, say
    what each holder's graphs keep)."""
    return bool(graphs) and graphs.get("mechanism") == "saved_tensor_data" and not graphs.get("cut")


def _is_collection(graphs: dict | None, owner: tuple) -> bool:
    """Graphs kept past their step: graphs of several forward passes (a list of losses, a dict of outputs, a
    running sum of losses), not the step's own (its loss, or the q, k, v locals of the forward in progress:
    several tensors, one pass). Without a trainable leaf to count passes by, several tensors with graphs."""
    for entry in (graphs or {}).get("owners", ()):
        if (entry["role"], entry.get("owner")) == owner:
            passes = entry.get("passes") or 0
            return entry["role"] in ("held", "frame_local") and (passes >= 2 if passes else entry["roots"] >= 2)
    return False


def _keeper(graphs: dict, storage: dict) -> tuple | None:
    """(census role, owner) of the graph that keeps a storage the walk reached. A storage only a collection's
    graphs reach is that collection's; one it shares with the step in progress (a list that already holds this
    step's output) is the step's working set, freed by its backward: the first other owner's."""
    owners = graphs.get("owners") or []
    keys = [(owners[i]["role"], owners[i].get("owner")) for i in storage.get("owners") or () if i < len(owners)]
    others = [key for key in keys if not _is_collection(graphs, key)]
    return (others or keys)[0] if keys else None


def _graph_blocks(graphs: dict, blocks: list, starts: list[int]) -> dict:
    """Block position -> (census role, owner) of the graph that keeps it."""
    found = {}
    for storage in graphs.get("storages") or ():
        position = _block_at(blocks, starts, storage["ptr"])
        keeper = _keeper(graphs, storage) if position is not None else None
        if keeper is not None:
            found[position] = keeper
    return found


def _storages_with_graph(census: dict) -> set[int]:
    """Census storages that a tensor with a grad_fn views: an autograd op's output that no Python object holds
    (it had a Python wrapper once), kept alive by the graph that saved it."""
    return {tensor["storage"] for tensor in census.get("tensors") or () if tensor.get("grad_fn")}


def _backward_in_progress(census: dict) -> bool:
    """The census was taken inside a backward pass (torch.autograd's engine on the main thread's stack): tensors
    without a holder are then the backward's own (saved activations being consumed, gradients in flight)."""
    return any(frame.get("name") in _BACKWARD_FRAMES for frame in census.get("main_stack") or ())


def _module_of(frames: list, names: dict | None) -> str | None:
    """The module whose forward allocated a block: of the ``forward`` frames (innermost first, torch's leaf
    layers and containers left out), the first whose caller's forward is defined in the same file — the
    model's own blocks (``GPT2MLP.forward`` in ``GPT2Block``, timm's ``Block.forward`` around the shared
    ``Mlp`` and ``Attention`` layers), not a generic layer of another file."""
    forwards = []
    for frame in frames or ():
        if frame.get("name") != "forward":
            continue
        filename = str(frame.get("filename") or "").replace("\\", "/")
        if "/torch/nn/modules/" in filename and filename.rsplit("/", 1)[-1] in _LEAF_MODULE_FILES:
            continue
        forwards.append((filename, frame))
    for position, (filename, frame) in enumerate(forwards):
        caller = forwards[position + 1][0] if position + 1 < len(forwards) else None
        if caller is None or caller == filename:
            label = frame_label(frame, names)
            return label if "." in label else None
    return None


def _saved_by_module(activation_blocks: list, names: dict | None) -> str | None:
    """"by Attention.forward 2.10 GiB, Mlp.forward 1.95 GiB, …": the activations by the module whose
    forward made them, when the trace names modules for most of them."""
    by_module: Counter = Counter()
    total = 0
    for _address, size, frames in activation_blocks:
        total += size
        module = _module_of(frames, names)
        if module:
            by_module[module] += size
    if not by_module or sum(by_module.values()) < 0.5 * total:
        return None
    return "by " + ", ".join(f"{module} {fmt(size)}" for module, size in by_module.most_common(3))


def _graphs_behind(holders: list[Holder], unnamed: dict, resolver: SourceResolver) -> Counter:
    """What the autograd graphs of held tensors keep alive. A kept tensor with a graph holds the
    tensors its graph saved, which no holder names; they were made by the same line as the kept
    tensor (the forward pass that made it). So the unnamed bytes made at a holder's line are counted
    as its graphs' (once: the first, largest holder of that line takes them). ``unnamed``: role ->
    blocks; returns the bytes taken from each role."""
    by_line: dict = {}
    for role, blocks in unnamed.items():
        for _address, size, frames in blocks:
            key = frames_key(frames, resolver) if frames else None
            if key and key[0] is not None:
                by_line.setdefault(key, Counter())[role] += size
    taken: Counter = Counter()
    for holder in holders:
        # A collection of graphs (a list of losses, a dict of outputs; a local one too, such as the list an
        # evaluation loop fills), not the one loss of the step in progress, whose graph the coming backward needs.
        container = holder.kind != "locals" and (holder.kind != "frame" or (holder.length or 0) >= 2)
        collection = container and (holder.with_graph or 0) >= 2
        if collection and holder.appended_at in by_line:
            sizes = by_line.pop(holder.appended_at)
            holder.graph_bytes = sum(sizes.values())
            holder.kept_lines[holder.appended_at] = holder.kept_lines.get(holder.appended_at, 0) + holder.graph_bytes
            taken.update(sizes)
    return taken


def _unjoined(census: dict, resolver: SourceResolver | None, name_saved: bool = True) -> Census:
    """A census from another moment than the snapshot's (the peak watcher's): its own sizes."""
    role_bytes: Counter = Counter()
    for census_role, figures in census["roles"].items():
        role_bytes[ROLE_NAMES[census_role][0]] += figures["bytes"]
    device = census.get("device") or {}
    allocated = device.get("allocated")
    remainder = max(allocated - sum(role_bytes.values()), 0) if allocated is not None else 0
    owner_bytes: Counter = Counter()
    for storage in census["storages"]:
        owner_bytes[(storage["role"], storage.get("owner"))] += storage["bytes"]
    holders, holder_at = _holders(census, owner_bytes, {}, resolver)
    graphs = _graph_facts(census) if name_saved else None
    if name_saved:  # as in join_census, by the census' own storage sizes
        saved, backward = _storages_with_graph(census), _backward_in_progress(census)
        owner_of = {storage["storage"]: _keeper(graphs, storage) for storage in (graphs or {}).get("storages") or ()
                    if storage.get("storage") is not None}
        for index, storage in enumerate(census["storages"]):
            if storage["role"] != "unreached":
                continue
            owner = owner_of.get(index)
            if owner is None and index not in saved and not backward:
                continue
            role_bytes["other"] -= storage["bytes"]
            if owner in holder_at and _is_collection(graphs, owner):
                holder_at[owner].graph_bytes += storage["bytes"]
                role_bytes["kept_graphs"] += storage["bytes"]
            else:
                remainder += storage["bytes"]
        for storage in (graphs or {}).get("storages") or ():  # what no Python object names, a collection's graphs keep
            keeper = _keeper(graphs, storage)
            if storage["python_visible"] or keeper not in holder_at or not _is_collection(graphs, keeper):
                continue
            hidden = min(storage["bytes"], remainder)
            holder_at[keeper].graph_bytes += hidden
            role_bytes["kept_graphs"] += hidden
            remainder -= hidden
        holders.sort(key=lambda holder: -(holder.bytes + holder.graph_bytes))
    grad = census.get("grad_mode") or {}
    return Census(moment=census["moment"], roles=_shares(census, role_bytes, remainder),
                  holders=holders, grad_enabled=grad.get("grad_enabled"),
                  inference_mode=grad.get("inference_mode"), main_stack=list(census.get("main_stack") or []),
                  notes=list(census.get("notes") or []), optimizer_bytes=role_bytes["optimizer_state"],
                  parameter_bytes=role_bytes["parameters"])


def _step_text(step: dict) -> str:
    edge = step.get("edge") or "?"
    name = step.get("name")
    return f"{edge} {name}" if name is not None else edge


NAME_SAVED = True  # benchmarks/census_roles.py measures the roles with it off and on, side by side

CENSUS_MOMENTS = {"oom": "at the OOM", "peak": "near the allocated peak", "end": "at the end of the run",
                  "on_demand": "when it was asked for"}


def census_moment_words(moment: str | None, outcome_oom: bool) -> str:
    """When the census behind a breakdown was taken, said so that it is not read as another moment's: a
    completed run without a census near its peak shows the end of the run, and says that the peak has none."""
    words = CENSUS_MOMENTS.get(moment or "", "at an unrecorded moment")
    if moment == "end" and not outcome_oom:
        words += "; no census was taken near the peak, so this is not the peak's breakdown"
    return words


def roles_sentence(census: Census, allocated: int) -> str | None:
    """"19.40 GiB live: activations 17.10 GiB · parameters 512 MiB · …" for evidence and code lenses."""
    if not census.roles:
        return None
    parts = " · ".join(f"{share.role.replace('_', ' ')} {fmt(share.bytes)}" for share in census.roles[:6])
    return f"{fmt(allocated)} live: {parts}"
