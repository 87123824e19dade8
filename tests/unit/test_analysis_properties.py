"""Invariants on many random allocator histories (seeded, so failures reproduce)."""

import random

import pytest
from test_analysis_builder import MIB, SnapshotBuilder, frame, user_stack

from vramlens.analysis import analyze_capture
from vramlens.capture import Capture

NATIVE_ONLY = [frame("??", 0, "c10::cuda::CUDACachingAllocator::malloc")]


def random_history(seed: int) -> SnapshotBuilder:
    rng = random.Random(seed)
    builder = SnapshotBuilder()
    segments = []
    next_segment = 0
    live: dict[int, int] = {}
    for _ in range(rng.randint(20, 200)):
        if not segments or rng.random() < 0.05:
            size = rng.choice([2 * MIB, 20 * MIB, 64 * MIB])
            builder.segment(next_segment, size, "small" if size == 2 * MIB else "large")
            segments.append([next_segment, size, next_segment])  # start, size, bump pointer
            next_segment += 1024 * MIB
        if live and rng.random() < 0.45:
            addr = rng.choice(sorted(live))
            builder.free(addr)
            del live[addr]
            continue
        segment = rng.choice(segments)
        size = rng.choice([512, 4096, 1 * MIB, 3 * MIB])
        if segment[2] + size > segment[0] + segment[1]:
            continue
        stack = rng.choice([user_stack(rng.randint(1, 5)), NATIVE_ONLY, []])
        builder.alloc(segment[2], size, stack)
        live[segment[2]] = size
        segment[2] += size
    return builder


@pytest.mark.parametrize("seed", range(40))
def test_invariants_hold_and_any_ring_buffer_cut_rebuilds_the_same_state(seed):
    builder = random_history(seed)
    full = analyze_capture(Capture(builder.snapshot(), {}, None))
    timeline = full.timeline
    assert timeline.start_allocated == 0 and timeline.start_reserved == 0
    assert all(0 <= p.allocated <= p.reserved for p in timeline.points)
    assert timeline.peak_allocated <= timeline.peak_reserved
    assert timeline.end_allocated == sum(builder.blocks[a][0] for a in builder.blocks)
    assert sum(line.live_bytes for line in full.lines) == full.accounting.allocated
    acc = full.accounting
    assert acc.largest_free_block is None or 0 <= acc.largest_free_block <= acc.cached

    trace = builder.trace
    cut = random.Random(seed).randrange(len(trace))
    dropped = analyze_capture(Capture({"segments": [], "device_traces": [trace[:cut] or [trace[0]]]}, {}, None)).timeline
    kept = analyze_capture(Capture(dict(builder.snapshot(), device_traces=[trace[cut:]]), {}, None)).timeline
    if cut:
        assert (kept.start_allocated, kept.start_reserved) == (dropped.end_allocated, dropped.end_reserved)
    assert (kept.end_allocated, kept.end_reserved) == (timeline.end_allocated, timeline.end_reserved)
    assert kept.peak_allocated <= timeline.peak_allocated
