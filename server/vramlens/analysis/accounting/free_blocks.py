"""Free blocks inside PyTorch's reserved memory: at the end (from the final segments) or at the
OOM (the final segments with the later segment events undone, minus the blocks live then).

A cached block can serve a request only from the same pool (requests above 1 MiB use the large
pool) and the same stream, so each free block carries both.
"""

from __future__ import annotations

import bisect
from collections import namedtuple

from vramlens.analysis.load.snapshot import ALLOCATED, FREE, block_state, pool_for_size, segment_pool
from vramlens.analysis.replay.trace import ReplayResult


# collections' namedtuple, which typing.NamedTuple builds on: importing typing takes 2 ms of start-up.
FreeBlock = namedtuple("FreeBlock", ("size", "pool", "stream", "segment", "segment_size"), defaults=(0, 0))
FreeBlock.__doc__ = """A free block: its size, its pool ("large" | "small"), its stream (or None), the start
address of the segment it lies in and that segment's size."""

SplitSegments = namedtuple("SplitSegments", ("count", "free", "largest", "total"))
SplitSegments.__doc__ = """Segments that held live blocks and free ones at once: the allocator can give a segment back to
the driver only when all of it is free, so the free part of these is stranded for larger requests. ``free``: the
free bytes inside them; ``largest``: the largest free block inside them; ``total``: their size."""


def free_blocks_at_end(segments: list[dict]) -> list[FreeBlock]:
    """Every inactive block in the final snapshot."""
    free = []
    for segment in segments:
        pool, stream = segment_pool(segment), segment.get("stream")
        for block in segment.get("blocks") or ():
            if block_state(block) == FREE:
                free.append(FreeBlock(block.get("size", 0), pool, stream, segment.get("address", 0), segment.get("total_size", 0)))
    return free


def _subtract(ranges: list[list], start: int, end: int) -> list[list]:
    kept = []
    for low, high, pool, stream in ranges:
        if high <= start or low >= end:
            kept.append([low, high, pool, stream])
            continue
        if low < start:
            kept.append([low, start, pool, stream])
        if high > end:
            kept.append([end, high, pool, stream])
    return kept


def segments_at_oom(segments: list[dict], replay: ReplayResult) -> list[list]:
    """[start, end, pool, stream] of the memory PyTorch reserved at the OOM."""
    ranges = [[s.get("address", 0), s.get("address", 0) + s.get("total_size", 0), segment_pool(s), s.get("stream")]
              for s in segments]
    for action, addr, size, stream in reversed(replay.segment_events_after_oom):
        if action in ("segment_alloc", "segment_map"):
            ranges = _subtract(ranges, addr, addr + size)
        else:
            ranges.append([addr, addr + size, pool_for_size(size), stream])
    return ranges


def free_blocks_at_oom(segments: list[dict], replay: ReplayResult) -> list[FreeBlock]:
    """Each gap between the blocks live at the OOM, inside the segments reserved then."""
    occupied = [(addr, block[0]) for addr, block in (replay.live_at_oom or {}).items()]
    occupied += replay.pre_freed_after_oom
    for segment in segments:  # live from before the trace until the end
        for block in segment.get("blocks") or ():
            if block_state(block) == ALLOCATED and block.get("address") not in replay.end_live:
                occupied.append((block.get("address", 0), block.get("size", 0)))
    occupied.sort()
    starts = [addr for addr, _ in occupied]
    free = []
    for low, high, pool, stream in sorted(segments_at_oom(segments, replay), key=lambda r: r[0]):
        cursor = low
        position = bisect.bisect_left(starts, low)
        while position < len(occupied) and occupied[position][0] < high:
            addr, size = occupied[position]
            if addr > cursor:
                free.append(FreeBlock(addr - cursor, pool, stream, low, high - low))
            cursor = max(cursor, addr + size)
            position += 1
        if cursor < high:
            free.append(FreeBlock(high - cursor, pool, stream, low, high - low))
    return free


def largest_free(free: list[FreeBlock], pool: str | None = None, stream: int | None = None) -> int:
    """The largest block a request from ``pool`` on ``stream`` could use (None: any)."""
    return max((b.size for b in free if (pool is None or b.pool == pool) and (stream is None or b.stream in (stream, None))),
               default=0)


def split_segments(free: list[FreeBlock], pool: str | None = None) -> SplitSegments:
    """The partly used segments of ``pool`` (a segment whose free blocks fill it is not split)."""
    by_segment: dict[int, list[FreeBlock]] = {}
    for block in free:
        if pool is None or block.pool == pool:
            by_segment.setdefault(block.segment, []).append(block)
    count = free_bytes = largest = total = 0
    for blocks in by_segment.values():
        size = blocks[0].segment_size
        stranded = sum(block.size for block in blocks)
        if size and stranded < size:
            count += 1
            free_bytes += stranded
            largest = max(largest, max(block.size for block in blocks))
            total += size
    return SplitSegments(count, free_bytes, largest, total)
