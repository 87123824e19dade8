"""Blocks the snapshot holds that the trace never allocated: they were live before the recorded
history began (the trace is a ring buffer), so they belong to the replay's starting state."""

from __future__ import annotations

from vramlens.analysis.load.snapshot import ALLOCATED, block_frames, block_requested_size, block_state
from vramlens.analysis.load.sources import SourceResolver
from vramlens.analysis.replay.trace import (
    BEFORE_TRACE, BLOCKS, OFFSET, OFFSET_BLOCKS, SIZES, ReplayResult, block_size, frames_key, new_line,
)


def add_blocks_from_before_trace(replay: ReplayResult, segments: list[dict], resolver: SourceResolver) -> int:
    """Blocks live at the end that the trace never allocated were live all along: give them to their
    lines as a constant. Returns the bytes allocated at the start of the trace."""
    start_allocated = replay.pre_freed
    if replay.pre_freed and BEFORE_TRACE in replay.lines:
        acc = replay.lines[BEFORE_TRACE]  # its counts went negative, one per block freed
        acc[OFFSET] += replay.pre_freed
        acc[OFFSET_BLOCKS] += -acc[BLOCKS]
    for segment in segments:
        for block in segment.get("blocks") or ():
            if block_state(block) != ALLOCATED or block.get("address") in replay.end_live:
                continue
            size = block_size(block_requested_size(block))
            frames = block_frames(block)
            key = frames_key(frames, resolver)
            acc = replay.lines.get(key)
            if acc is None:
                acc = replay.lines[key] = new_line(key, frames)
            acc[OFFSET] += size
            acc[OFFSET_BLOCKS] += 1
            acc[SIZES][size] = acc[SIZES].get(size, 0) + 1
            start_allocated += size
    return start_allocated
