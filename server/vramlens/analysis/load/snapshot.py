"""One view over snapshot layouts from torch 2.1 to today.

Differences absorbed here: blocks carry ``frames`` or (older) ``history``; block state is
``active_pending_free`` or ``active_awaiting_free``; ``time_us`` only from 2.2;
``allocator_settings`` only from 2.3; trace entries may carry keys this code never reads.
Nothing is copied: the trace is read in place.
"""

from __future__ import annotations

from vramlens.capture import CaptureError

SMALL_POOL_SEGMENT = 2 * 1024 * 1024  # kSmallBuffer: every small-pool segment has this size
SMALL_REQUEST_LIMIT = 1024 * 1024  # kSmallSize: larger requests are served from the large pool only

ALLOCATED = "allocated"
PENDING_FREE = "pending_free"
FREE = "free"
_STATES = {
    "active_allocated": ALLOCATED,
    "active_pending_free": PENDING_FREE,
    "active_awaiting_free": PENDING_FREE,
    "inactive": FREE,
}


def pick_device(snapshot: dict, meta: dict) -> int:
    """The device the run used: the recorded one, else the one whose trace or segments are busiest."""
    for source in ((meta.get("oom") or {}).get("device"), (meta.get("environment") or {}).get("device_index")):
        if isinstance(source, int):
            return source
    traces = snapshot.get("device_traces") or []
    if traces and any(traces):
        return max(range(len(traces)), key=lambda d: len(traces[d] or ()))
    devices = [seg.get("device", 0) for seg in snapshot.get("segments") or ()]
    return max(set(devices), key=devices.count) if devices else 0


def device_trace(snapshot: dict, device: int) -> list:
    traces = snapshot.get("device_traces") or []
    if isinstance(traces, dict):  # tolerate a mapping keyed by device
        return traces.get(device) or []
    return traces[device] or [] if 0 <= device < len(traces) else []


def settle_skipped_actions(trace: list, actions: dict[str, int], reused_addresses: int) -> list[str]:
    """A history recorded with ``skip_actions`` (torch 2.11+) lacks one side of the alloc/free pairs:
    made readable where the other side says enough, refused where live memory cannot be told.
    Returns notes for the reader."""
    requested = actions.get("free_requested", 0) + actions.get("free", 0)
    completed = actions.get("free_completed", 0)
    notes = []
    if completed and not requested:
        # The replay drops bytes at free_requested; without those, the completions are the frees.
        for entry in trace:
            if entry["action"] == "free_completed":
                entry["action"] = "free_requested"
        notes.append("The history was recorded without free_requested events (skip_actions): each free is "
                     "counted when it completed, a little later than the tensor was released.")
    elif reused_addresses and not requested:
        raise CaptureError(
            f"The history was recorded without frees (skip_actions), yet {reused_addresses} allocations reuse an "
            "address it never freed: what was live at any moment cannot be told from it. Record it again "
            "without skipping free_requested.")
    if not actions.get("alloc") and (requested or completed):
        notes.append("The history holds frees but no allocations (recorded with skip_actions=['alloc']): "
                     "lines are attributed from the blocks still live at the end only.")
    return notes


def device_segments(snapshot: dict, device: int) -> list[dict]:
    return [seg for seg in snapshot.get("segments") or () if seg.get("device", device) == device]


def segment_pool(segment: dict) -> str:
    kind = segment.get("segment_type")
    if kind in ("large", "small"):
        return kind
    return "small" if segment.get("total_size") == SMALL_POOL_SEGMENT else "large"


def pool_for_size(segment_size: int) -> str:
    return "small" if segment_size == SMALL_POOL_SEGMENT else "large"


def pool_for_request(request: int) -> str:
    return "large" if request > SMALL_REQUEST_LIMIT else "small"


def block_state(block: dict) -> str:
    state = block.get("state")
    if state in _STATES:
        return _STATES[state]
    if "allocated" in block:  # very old layouts
        return ALLOCATED if block["allocated"] else FREE
    return FREE


def block_frames(block: dict) -> list:
    """The allocation stack of a block: ``frames`` (2.1+) or the last ``history`` entry (older)."""
    frames = block.get("frames")
    if frames:
        return frames
    history = block.get("history")
    if history:
        return history[-1].get("frames") or []
    return []


def block_requested_size(block: dict) -> int:
    """What the trace would have recorded for this block (its requested size when known)."""
    requested = block.get("requested_size")
    if requested:
        return requested
    history = block.get("history")
    if history and history[-1].get("real_size"):
        return history[-1]["real_size"]
    return block.get("size", 0)


def parse_alloc_conf(text: str) -> dict:
    """``expandable_segments:True,max_split_size_mb:256`` -> {"expandable_segments": "True", ...}."""
    settings = {}
    for part in str(text).split(","):
        key, sep, value = part.partition(":")
        if sep and key.strip():
            settings[key.strip()] = value.strip()
    return settings


def allocator_settings(snapshot: dict, meta: dict) -> dict:
    """What the allocator ran with: the snapshot's record, the capture's, and the env vars that set them."""
    merged: dict = {}
    environment = meta.get("environment") or {}
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        value = (environment.get("alloc_env") or {}).get(name)
        if value:
            merged.update(parse_alloc_conf(value))
    for recorded in (environment.get("allocator_settings"), snapshot.get("allocator_settings")):
        if isinstance(recorded, dict):
            merged.update({str(k): v for k, v in recorded.items()})
    return merged


def _truthy(value) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def expandable_segments_on(settings: dict, segments: list[dict]) -> bool:
    if _truthy(settings.get("expandable_segments", False)):
        return True
    return any(seg.get("is_expandable") for seg in segments)


def max_split_size(settings: dict) -> int | None:
    """max_split_size in bytes when one is in force (torch reports SIZE_MAX when unset)."""
    if "max_split_size_mb" in settings:
        try:
            return int(float(settings["max_split_size_mb"]) * 1024 * 1024)
        except ValueError:
            return None
    value = settings.get("max_split_size")
    if isinstance(value, int) and 0 < value < 2**62:
        return value
    return None
