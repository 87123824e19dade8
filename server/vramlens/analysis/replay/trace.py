"""One pass over the allocator trace: the timeline, the peak, the OOM, and per-line aggregates.

The trace is a ring buffer, so the pass counts everything relative to its first entry and
the absolute state at the start is reconstructed afterwards from the final ``segments``
minus what the trace did. The loop keeps no per-entry objects: per line it aggregates into
one small list, and per live block it keeps one tuple until the block is freed.
"""

from __future__ import annotations

import gc
from array import array
from dataclasses import dataclass, field

from vramlens.analysis.load.sources import LIBRARY, USER, SourceResolver

# Keys of the pseudo-lines (real lines are (filename, line)).
NO_FRAME = (None, 0)
LIBRARY_ONLY = (None, 1)
BEFORE_TRACE = (None, 2)

# Slots of a line's accumulator list (a list, not an object: it is touched on every event).
# Count and total are not kept: they follow from SIZES (block size -> allocations).
LIVE, SIZES, FRAMES, BLOCKS, AT_PEAK, AT_OOM, KEY, OFFSET, OFFSET_BLOCKS, BLOCKS_AT_PEAK, BLOCKS_AT_OOM = range(11)

TIMELINE_POINTS = 400
MIN_BLOCK = 512
MAX_STACKS = 1 << 16  # bounds the stack memo when frames lists are not shared (a trace built by hand)


def block_size(requested: int) -> int:
    """The allocator's rounding: up to a multiple of 512 bytes, at least 512 (inlined in the hot loop)."""
    return ((requested + 511) >> 9) << 9 or MIN_BLOCK


def new_line(key, frames) -> list:
    return [0, {}, frames, 0, 0, 0, key, 0, 0, 0, 0]


@dataclass
class ReplayResult:
    """What replaying the trace found: per-line accumulators, the timeline, the peak and the OOM."""

    entries: int
    lines: dict  # key -> accumulator list
    points: list  # (index, time_us, max allocated, max reserved) relative to the start
    end_allocated: int  # relative
    end_reserved: int  # relative
    peak_allocated: int  # relative
    peak_reserved: int  # relative: the highest reserved anywhere in the trace
    peak_index: int | None
    peak_time_us: int | None
    end_live: dict  # addr -> (size, accumulator, index) of blocks allocated in the trace and never freed
    pre_freed: int  # bytes freed in the trace that it never allocated: they existed at its start
    reserved_at_peak: int = 0  # relative: reserved when allocated peaked
    oom_index: int | None = None
    oom_time_us: int | None = None
    oom_request: int | None = None
    oom_stream: int | None = None
    oom_device_free: int | None = None
    oom_count: int = 0
    allocated_at_oom: int | None = None  # relative
    reserved_at_oom: int | None = None  # relative
    live_at_oom: dict | None = None  # addr -> (size, accumulator, index)
    oom_frames: list | None = None  # the failing request's stack (empty when the autograd engine made it)
    segment_events_after_oom: list = field(default_factory=list)  # (action, addr, size, stream)
    pre_freed_after_oom: list = field(default_factory=list)  # (addr, size): live at the OOM, from before the trace
    allocs: "AllocLog | None" = None  # every allocation in order, for the step model
    oom_alloc_count: int | None = None  # allocations made before the (latest) OOM


@dataclass
class AllocLog:
    """One row per allocation, kept in flat arrays (a million allocations cost ~25 MB, no objects):
    where it is in the trace, its size, the allocated total right after it, and its stack."""

    index: array = field(default_factory=lambda: array("q"))
    size: array = field(default_factory=lambda: array("q"))
    after: array = field(default_factory=lambda: array("q"))  # allocated bytes after it, relative to the trace start
    frames: list = field(default_factory=list)  # the snapshot's own frames lists (shared, not copied)

    def __len__(self) -> int:
        return len(self.index)


def frames_key(frames, resolver: SourceResolver):
    """The line a frames list belongs to: its innermost user frame, or a pseudo-line."""
    if not frames:
        return NO_FRAME
    kinds, classify = resolver.kind_cache, resolver.kind
    python_seen = False
    for frame in frames:
        filename = frame.get("filename", "??")
        kind = kinds.get(filename) or classify(filename)
        if kind == USER:
            return (filename, frame.get("line"))
        if kind == LIBRARY:
            python_seen = True
    return LIBRARY_ONLY if python_seen else NO_FRAME


def replay(trace: list, resolver: SourceResolver) -> ReplayResult:
    """Replay with the cyclic GC paused: the loop makes no cycles, yet each collection would walk
    the whole snapshot (millions of objects) again."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _replay(trace, resolver)
    finally:
        if was_enabled:
            gc.enable()


def _chunks(entries: int, bucket: int):
    """(start, stop, ends a timeline point) for consecutive runs of the trace: the runs end where a
    timeline point is due, so the hot loop does not test for it."""
    start = 0
    while start < entries:
        next_point = (start // bucket + 1) * bucket
        stop = min(next_point, entries)
        yield start, stop, stop == next_point
        start = stop


def _replay(trace: list, resolver: SourceResolver) -> ReplayResult:  # noqa: C901 - one hot loop, kept whole on purpose
    entries = len(trace)
    bucket = max(1, entries // TIMELINE_POINTS)
    lines: dict = {}
    live: dict = {}
    points: list = []
    allocated = reserved = 0
    bucket_allocated = bucket_reserved = 0
    peak = reserved_at_peak = max_reserved = 0
    peak_index = peak_time = None
    peak_pending = False
    pre_freed = 0
    result = ReplayResult(entries, lines, points, 0, 0, 0, 0, None, None, {}, 0)
    log = result.allocs = AllocLog()
    log_index, log_size, log_after, log_frames = log.index.append, log.size.append, log.after.append, log.frames.append
    oom_seen = False
    before = no_frame = None
    # The loader gives every entry of one stack the same frames list (capture/stacks.py), so a
    # stack's line is found once: id of the frames list -> its line's accumulator.
    stacks: dict = {}

    def line_of(key, frames) -> list:
        acc = lines.get(key)
        if acc is None:
            acc = lines[key] = new_line(key, frames)
        return acc

    for start, stop, point_due in _chunks(entries, bucket):
        for index, entry in enumerate(trace[start:stop], start):
            action = entry["action"]
            if action == "alloc":
                size = entry["size"]
                if size & 511 or not size:  # torch mostly records sizes already rounded: keep that int
                    size = ((size + 511) >> 9) << 9 or MIN_BLOCK
                frames = entry.get("frames")
                if not frames:
                    acc = no_frame or line_of(NO_FRAME, frames)
                    no_frame = acc
                else:
                    acc = stacks.get(id(frames))
                    if acc is None:
                        acc = line_of(frames_key(frames, resolver), frames)
                        if len(stacks) < MAX_STACKS:
                            stacks[id(frames)] = acc
                acc[LIVE] += size
                acc[BLOCKS] += 1
                sizes = acc[SIZES]
                try:
                    sizes[size] += 1
                except KeyError:
                    sizes[size] = 1
                live[entry["addr"]] = (size, acc, index)
                allocated += size
                log_index(index)
                log_size(size)
                log_after(allocated)
                log_frames(frames)
                if allocated > bucket_allocated:
                    bucket_allocated = allocated
                    if allocated > peak:
                        peak = allocated
                        reserved_at_peak = reserved
                        peak_index = index
                        peak_pending = True
            elif action == "free_completed":
                pass  # allocated bytes already dropped at free_requested (torch's own accounting does the same)
            elif action == "free_requested" or action == "free":
                if peak_pending:  # the state right before the first drop after a new peak is the peak state
                    for acc in lines.values():
                        acc[AT_PEAK] = acc[LIVE]
                        acc[BLOCKS_AT_PEAK] = acc[BLOCKS]
                    peak_pending = False
                block = live.pop(entry["addr"], None)
                if block is None:  # freed here, allocated before the trace began
                    size = block_size(entry["size"])
                    pre_freed += size
                    if before is None:
                        before = lines[BEFORE_TRACE] = new_line(BEFORE_TRACE, None)
                    before[LIVE] -= size
                    before[BLOCKS] -= 1
                    if oom_seen:
                        result.pre_freed_after_oom.append((entry["addr"], size))
                else:
                    size, acc, _ = block
                    acc[LIVE] -= size
                    acc[BLOCKS] -= 1
                allocated -= size
            elif action == "segment_alloc" or action == "segment_map":
                reserved += entry["size"]
                if reserved > bucket_reserved:
                    bucket_reserved = reserved
                    if reserved > max_reserved:
                        max_reserved = reserved
                if oom_seen:
                    result.segment_events_after_oom.append((action, entry["addr"], entry["size"], entry.get("stream")))
            elif action == "segment_free" or action == "segment_unmap":
                reserved -= entry["size"]
                if oom_seen:
                    result.segment_events_after_oom.append((action, entry["addr"], entry["size"], entry.get("stream")))
            elif action == "oom":
                # The latest OOM is the one to explain: a script that caught an earlier one and
                # retried smaller died of this one (and the capture's snapshot was taken at it).
                result.oom_count += 1
                oom_seen = True
                result.oom_index = index
                result.oom_time_us = entry.get("time_us")
                result.oom_request = entry.get("size")
                result.oom_stream = entry.get("stream")
                result.oom_device_free = entry.get("device_free", entry.get("addr"))
                result.oom_frames = entry.get("frames")
                result.oom_alloc_count = len(log.index)
                result.allocated_at_oom = allocated
                result.reserved_at_oom = reserved
                result.live_at_oom = dict(live)
                result.segment_events_after_oom = []
                result.pre_freed_after_oom = []
                for acc in lines.values():
                    acc[AT_OOM] = acc[LIVE]
                    acc[BLOCKS_AT_OOM] = acc[BLOCKS]
        if point_due:
            points.append((stop - 1, trace[stop - 1].get("time_us"), bucket_allocated, bucket_reserved))
            bucket_allocated, bucket_reserved = allocated, reserved

    if peak_pending:
        for acc in lines.values():
            acc[AT_PEAK] = acc[LIVE]
            acc[BLOCKS_AT_PEAK] = acc[BLOCKS]
    if entries and (not points or points[-1][0] != entries - 1):
        points.append((entries - 1, trace[-1].get("time_us"), bucket_allocated, bucket_reserved))
    if peak_index is not None:
        peak_time = trace[peak_index].get("time_us")
    result.end_allocated, result.end_reserved = allocated, reserved
    result.peak_allocated, result.peak_reserved, result.reserved_at_peak = peak, max_reserved, reserved_at_peak
    result.peak_index, result.peak_time_us = peak_index, peak_time
    result.end_live, result.pre_freed = live, pre_freed
    return result
