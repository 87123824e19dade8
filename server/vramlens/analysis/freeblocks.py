"""Free blocks inside PyTorch's reserved memory: at the end (from the final segments) or at the
OOM (the final segments with the later segment events undone, minus the blocks live then)."""

from __future__ import annotations

import bisect

from vramlens.analysis.normalize import ALLOCATED, FREE, block_state, pool_for_size, segment_pool
from vramlens.analysis.replay import ReplayResult


def free_blocks_at_end(segments: list[dict]) -> list[tuple[int, str]]:
    """(size, pool) of every inactive block in the final snapshot."""
    free = []
    for segment in segments:
        pool = segment_pool(segment)
        for block in segment.get("blocks") or ():
            if block_state(block) == FREE:
                free.append((block.get("size", 0), pool))
    return free


def _subtract(ranges: list[list], start: int, end: int) -> list[list]:
    kept = []
    for low, high, pool in ranges:
        if high <= start or low >= end:
            kept.append([low, high, pool])
            continue
        if low < start:
            kept.append([low, start, pool])
        if high > end:
            kept.append([end, high, pool])
    return kept


def segments_at_oom(segments: list[dict], replay: ReplayResult) -> list[list]:
    """[start, end, pool] of the memory PyTorch reserved at the OOM."""
    ranges = [[s.get("address", 0), s.get("address", 0) + s.get("total_size", 0), segment_pool(s)] for s in segments]
    for action, addr, size in reversed(replay.segment_events_after_oom):
        if action in ("segment_alloc", "segment_map"):
            ranges = _subtract(ranges, addr, addr + size)
        else:
            ranges.append([addr, addr + size, pool_for_size(size)])
    return ranges


def free_blocks_at_oom(segments: list[dict], replay: ReplayResult) -> list[tuple[int, str]]:
    """(size, pool) of each gap between the blocks live at the OOM, inside the segments reserved then."""
    occupied = [(addr, block[0]) for addr, block in (replay.live_at_oom or {}).items()]
    occupied += replay.pre_freed_after_oom
    for segment in segments:  # live from before the trace until the end
        for block in segment.get("blocks") or ():
            if block_state(block) == ALLOCATED and block.get("address") not in replay.end_live:
                occupied.append((block.get("address", 0), block.get("size", 0)))
    occupied.sort()
    starts = [addr for addr, _ in occupied]
    free = []
    for low, high, pool in sorted(segments_at_oom(segments, replay)):
        cursor = low
        position = bisect.bisect_left(starts, low)
        while position < len(occupied) and occupied[position][0] < high:
            addr, size = occupied[position]
            if addr > cursor:
                free.append((addr - cursor, pool))
            cursor = max(cursor, addr + size)
            position += 1
        if cursor < high:
            free.append((high - cursor, pool))
    return free


def largest_free(free: list[tuple[int, str]], pool: str | None = None) -> int:
    sizes = [size for size, block_pool in free if pool is None or block_pool == pool]
    return max(sizes, default=0)
