"""What was live at one instant of the trace (memory_viz's Active Memory Timeline at a crosshair):
the blocks allocated in the trace and not yet freed there, grouped by the stack that allocated
them, largest first. Blocks from before the recorded history have no stack and are summed apart."""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.units import count_of
from vramlens.units import format_bytes as fmt

MAX_GROUPS = 25
MAX_FRAMES = 40  # a stack deeper than this keeps its innermost frames


@dataclass
class LiveGroup:
    bytes: int
    blocks: int
    frames: list[str]  # innermost first, as the snapshot lists them: "torch/nn/modules/linear.py:134 forward"
    label: str  # "2.82 GiB · 23 blocks"


@dataclass
class LiveAt:
    index: int
    total: int
    groups: list[LiveGroup]
    summary: str  # "3.05 GiB live in 1,204 blocks from 38 stacks (the largest 25 shown)"


def _frame_text(frame: dict) -> str:
    """`torch/nn/modules/linear.py:134 forward` for a library's file, `train.py:20 evaluate` for the user's."""
    filename = str(frame.get("filename", "??")).replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in filename:
            filename = filename.rsplit(marker, 1)[1]
            break
    else:
        filename = filename.rsplit("/", 1)[-1]  # the user's file by its name, as the report links it
    return f"{filename}:{frame.get('line')} {frame.get('name', '?')}"


def _shown(frame: dict) -> bool:
    """The recorder's own frames (it runs the script) are nobody's code to look at."""
    return "/vramlens/agent/" not in str(frame.get("filename", "")).replace("\\", "/")


def live_at(trace: list, index: int) -> LiveAt:
    """The trace replayed up to and including ``index`` (a position in it)."""
    index = max(0, min(index, len(trace) - 1))
    live: dict = {}  # address -> (size, frames)
    for entry in trace[: index + 1]:
        action = entry.get("action")
        if action == "alloc":
            live[entry.get("addr")] = (entry.get("size", 0), entry.get("frames") or ())
        elif action in ("free_requested", "free"):
            live.pop(entry.get("addr"), None)
    groups: dict = {}
    for size, frames in live.values():
        key = tuple((frame.get("filename"), frame.get("line"), frame.get("name")) for frame in frames)
        held = groups.get(key)
        groups[key] = (held[0] + size, held[1] + 1, frames) if held else (size, 1, frames)
    ordered = sorted(groups.values(), key=lambda group: -group[0])
    total = sum(group[0] for group in ordered)
    shown = [LiveGroup(size, blocks, [_frame_text(frame) for frame in frames if _shown(frame)][:MAX_FRAMES],
                       f"{fmt(size)} · {count_of(blocks, 'block')}") for size, blocks, frames in ordered[:MAX_GROUPS]]
    summary = f"{fmt(total)} live in {count_of(len(live), 'block')} from {count_of(len(ordered), 'stack')}"
    if len(ordered) > MAX_GROUPS:
        summary += f" (the largest {MAX_GROUPS} shown)"
    return LiveAt(index, total, shown, summary + "; blocks from before the recorded history are not counted")


def live_at_json(found: LiveAt) -> dict:
    return {"index": found.index, "total": found.total, "summary": found.summary,
            "groups": [{"bytes": group.bytes, "blocks": group.blocks, "label": group.label, "frames": group.frames}
                       for group in found.groups]}
