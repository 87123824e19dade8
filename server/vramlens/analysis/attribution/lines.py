"""Per-line results from the replay's aggregates: live bytes at the moment that matters,
share, totals, growth across the run, common block sizes and the call path."""

from __future__ import annotations

from vramlens.analysis.model import BEFORE_TRACE_FUNCTION, LIBRARY_ONLY_FUNCTION, NO_FRAME_FUNCTION, LineStat
from vramlens.analysis.replay.trace import (
    AT_OOM, AT_PEAK, BEFORE_TRACE, BLOCKS, BLOCKS_AT_OOM, BLOCKS_AT_PEAK, FRAMES, KEY, LIBRARY_ONLY, LIVE,
    NO_FRAME, OFFSET, OFFSET_BLOCKS, SIZES, ReplayResult,
)
from vramlens.analysis.load.sources import NATIVE, SourceResolver

_PSEUDO_FUNCTIONS = {NO_FRAME: NO_FRAME_FUNCTION, LIBRARY_ONLY: LIBRARY_ONLY_FUNCTION, BEFORE_TRACE: BEFORE_TRACE_FUNCTION}
MIN_GROWTH = 1024 * 1024  # growth below this is noise, not a leak
CALL_PATH_DEPTH = 6

BACKWARD_FUNCTIONS = ("backward", "grad", "_engine_run_backward")


def backward_seen(replay: ReplayResult) -> bool:
    """Whether a backward pass may have run in the recorded history.

    The autograd engine runs a CUDA backward on its own device thread, which has no Python frame,
    so its allocations land on the frameless pseudo-line (with ``--stacks all`` too: C++ frames
    only). A trace without any frameless allocation therefore ran no backward. Other C++ code can
    allocate without a Python frame as well, so a frameless line only means "maybe": the signal errs
    towards training, never telling a training run to switch grad mode off. A backward called on the
    Python thread (``torch.autograd.backward`` / ``grad`` frames) counts too."""
    if NO_FRAME in replay.lines:
        return True
    return any(
        frame.get("name") in BACKWARD_FUNCTIONS and "torch/" in str(frame.get("filename", "")).replace("\\", "/")
        for acc in replay.lines.values() for frame in acc[FRAMES] or ()
    )


def call_path(frames: list | None, key, resolver: SourceResolver) -> list[str]:
    """The frames from the user line inward, e.g. ["train.py:42 step", "torch/nn/modules/linear.py:125 forward"]."""
    if not frames:
        return []
    python = [f for f in frames if resolver.kind(f.get("filename", "??")) != NATIVE]
    user_at = next((i for i, f in enumerate(python) if (f.get("filename"), f.get("line")) == key), None)
    chosen = python[: user_at + 1] if user_at is not None else python[:CALL_PATH_DEPTH]
    chosen = list(reversed(chosen))
    if len(chosen) > CALL_PATH_DEPTH:
        chosen = chosen[: CALL_PATH_DEPTH - 1] + chosen[-1:]
    return [f"{resolver.place(f.get('filename', '??'), f.get('line'))} {f.get('name', '?')}" for f in chosen]


def _function_of(acc: list, resolver: SourceResolver) -> str:
    key = acc[KEY]
    if key in _PSEUDO_FUNCTIONS:
        return _PSEUDO_FUNCTIONS[key]
    for frame in acc[FRAMES] or ():
        if frame.get("filename") == key[0] and frame.get("line") == key[1]:
            return frame.get("name", "?")
    return "?"


def line_stats(replay: ReplayResult, moment: str, resolver: SourceResolver) -> list[LineStat]:
    """Every line that allocated, by live bytes at ``moment`` ("oom", "peak" or "end"), largest first."""
    slot, blocks_slot = {"oom": (AT_OOM, BLOCKS_AT_OOM), "peak": (AT_PEAK, BLOCKS_AT_PEAK)}.get(moment, (LIVE, BLOCKS))
    accs = list(replay.lines.values())
    live_of = {id(acc): max(acc[slot] + acc[OFFSET], 0) for acc in accs}
    total_live = sum(live_of.values()) or 1
    stats = []
    for acc in accs:
        key = acc[KEY]
        histogram = sorted(acc[SIZES].items(), key=lambda item: (-item[1], -item[0]))[:5]
        is_user = key[0] is not None
        blocks = max(acc[blocks_slot] + acc[OFFSET_BLOCKS], 0)
        stats.append(LineStat(
            path=key[0], line=key[1] if is_user else None, function=_function_of(acc, resolver),
            live_bytes=live_of[id(acc)], share=live_of[id(acc)] / total_live,
            allocated_bytes=sum(size * count for size, count in acc[SIZES].items()), count=sum(acc[SIZES].values()), growing=False,
            growth_bytes=0, live_blocks=blocks, size_histogram=histogram,
            call_path=call_path(acc[FRAMES], key, resolver),
            local_path=resolver.local_path(key[0]) if is_user else None,
            source=resolver.source_line(key[0], key[1]) if is_user else None,
            cell=resolver.cell_ref(key[0]) if is_user else None,
        ))
    stats.sort(key=lambda s: (-s.live_bytes, -s.allocated_bytes, s.path or "", s.line or 0))
    return stats




def add_live_detail(lines: list[LineStat], replay: ReplayResult, live: dict | None, trace: list,
                    resolver: SourceResolver) -> None:
    """Give each line the blocks it has live at the moment and the call path of its largest live
    stack: the hover then describes the bytes that are live, not the line's first allocation.

    ``live`` is the replay's addr -> (size, accumulator, trace index) at the moment (None at a peak,
    which keeps no block list: the lines keep their run-wide figures)."""
    if not live:
        return
    by_acc: dict = {}
    for size, acc, index in live.values():
        sizes, stacks = by_acc.setdefault(id(acc), ({}, {}))
        sizes[size] = sizes.get(size, 0) + 1
        frames = trace[index].get("frames") if index < len(trace) else None
        if frames:
            stack = id(frames[0]), len(frames)  # torch shares frame dicts between entries: a cheap identity
            held = stacks.get(stack)
            stacks[stack] = (held[0] + size if held else size, frames)
    keys = {acc[KEY]: id(acc) for acc in replay.lines.values()}
    for line in lines:
        found = by_acc.get(keys.get((line.path, line.line) if line.path is not None else None, -1))
        if found is None:
            continue
        sizes, stacks = found
        line.live_sizes = sorted(sizes.items(), key=lambda item: (-item[0] * item[1], -item[0]))
        if stacks:
            _, frames = max(stacks.values(), key=lambda held: held[0])
            line.live_call_path = call_path(frames, (line.path, line.line), resolver)


def mark_growing(lines: list[LineStat], growth) -> None:
    """Mark the lines whose blocks carry the growth across steps (analysis/attribution/growth.py)."""
    if growth is None:
        return
    carried = dict(growth.carriers)
    for line in lines:
        size = carried.get((line.path, line.line) if line.path is not None else None, 0)
        if size >= MIN_GROWTH:
            line.growing, line.growth_bytes = True, size
