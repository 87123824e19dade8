"""The segment map of a capture recorded on the H200: the same free pieces the accounting reasons with."""

from __future__ import annotations

from pathlib import Path

import pytest

from vramlens.analysis import analyze_path
from vramlens.analysis.accounting.segment_map import MAX_SEGMENTS, segment_map
from vramlens.analysis.load.snapshot import device_segments, pick_device
from vramlens.capture import load_capture

REALWORLD = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"


@pytest.mark.parametrize("name", ["dynamic_padding_fragmentation", "lightning_val_outputs"])
def test_the_map_holds_every_segment_and_the_largest_free_piece_the_accounting_found(name):
    capture = load_capture(REALWORLD / name / "capture")
    segments = device_segments(capture.snapshot, pick_device(capture.snapshot, capture.meta))
    analysis = analyze_path(REALWORLD / name / "capture")
    found = segment_map(segments, analysis.accounting.request)
    assert len(found.rows) == min(len(segments), MAX_SEGMENTS)
    for row in found.rows:  # blocks tile their segment, in address order
        assert sum(size for _, size, _ in row.blocks) == row.size
        assert [offset for offset, _, _ in row.blocks] == sorted(offset for offset, _, _ in row.blocks)
    largest = max(row.largest_free for row in found.rows if row.pool == found.request_pool)
    assert largest == analysis.accounting.largest_free_block
    assert found.fits_anywhere is False and "fits no free block" in found.summary  # both failed for want of one piece


def test_no_segments_no_map():
    assert segment_map([], 1024) is None


def test_what_was_live_at_the_oom_is_grouped_by_stack_largest_first():
    from vramlens.analysis.attribution.live_at import live_at
    from vramlens.analysis.load.snapshot import device_trace

    capture = load_capture(REALWORLD / "lightning_val_outputs" / "capture")
    trace = device_trace(capture.snapshot, pick_device(capture.snapshot, capture.meta))
    oom = analyze_path(REALWORLD / "lightning_val_outputs" / "capture").timeline.oom_index
    found = live_at(trace, oom)
    top = found.groups[0]
    # The 23 validation outputs the module keeps: one stack, 125 MiB each, made by the head's Linear.
    assert top.blocks == 23 and top.bytes == 23 * 125 * 2**20
    assert top.frames[0].startswith("torch/nn/modules/linear.py:") and any("keep_val_outputs.py:28" in f for f in top.frames)
    assert [group.bytes for group in found.groups] == sorted((group.bytes for group in found.groups), reverse=True)
    assert live_at(trace, 0).total <= trace[0].get("size", 0)  # before anything else: at most the first block
