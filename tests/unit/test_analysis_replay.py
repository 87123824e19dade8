"""Replay: timeline, peak, OOM, ring-buffer reconstruction, expandable segments, old layouts."""

from test_analysis_builder import MIB, SnapshotBuilder, user_stack

from vramlens.analysis import analyze_capture
from vramlens.capture import Capture


def analyze(snapshot, meta=None, **options):
    return analyze_capture(Capture(snapshot, meta or {}, None), **options)


def training_run() -> SnapshotBuilder:
    builder = SnapshotBuilder().segment(0, 256 * MIB)
    builder.alloc(0, 32 * MIB, user_stack(10, function="setup"))  # weights, live throughout
    for _ in range(5):
        builder.alloc(32 * MIB, 64 * MIB, user_stack(42))
        builder.alloc(96 * MIB, 16 * MIB, user_stack(43))
        builder.free(96 * MIB).free(32 * MIB)
    return builder


def test_peak_and_end_are_the_replayed_totals():
    timeline = analyze(training_run().snapshot()).timeline
    assert timeline.peak_allocated == (32 + 64 + 16) * MIB
    assert timeline.end_allocated == 32 * MIB
    assert timeline.peak_reserved == timeline.end_reserved == 256 * MIB
    assert timeline.points and max(point.allocated for point in timeline.points) == timeline.peak_allocated


def test_ring_buffer_start_is_reconstructed_from_final_segments():
    builder = training_run()
    full = analyze(builder.snapshot()).timeline
    cut = analyze(builder.snapshot(keep_last=5)).timeline  # lost: the segment, the setup alloc, an alloc at line 42
    assert cut.start_allocated == 32 * MIB + 64 * MIB  # weights, and a block whose alloc fell off the buffer
    assert cut.start_reserved == 256 * MIB
    assert cut.peak_allocated == full.peak_allocated
    assert cut.end_allocated == full.end_allocated


def test_block_freed_but_never_allocated_in_trace_existed_before():
    builder = training_run()
    analysis = analyze(builder.snapshot(keep_last=4))  # only the frees of the last iteration remain
    assert analysis.timeline.start_allocated == (32 + 64 + 16) * MIB
    before = [line for line in analysis.lines if line.function.startswith("<allocated before")]
    assert before and before[0].live_bytes == (64 + 16) * MIB


def test_oom_point_is_where_the_trace_failed_not_the_end():
    builder = SnapshotBuilder().segment(0, 128 * MIB)
    builder.alloc(0, 96 * MIB, user_stack(42)).oom(request=64 * MIB, device_free=0)
    builder.free(0)
    analysis = analyze(builder.snapshot(), total_memory=128 * MIB)
    assert analysis.outcome == "oom"
    assert analysis.accounting.moment == "oom"
    assert analysis.accounting.allocated == 96 * MIB
    assert analysis.accounting.request == 64 * MIB
    assert analysis.lines[0].line == 42 and analysis.lines[0].live_bytes == 96 * MIB


def test_expandable_segments_map_and_unmap_change_reserved():
    builder = SnapshotBuilder()
    builder._add("segment_map", 0, 40 * MIB)
    builder.alloc(0, 30 * MIB, user_stack(5))
    builder.free(0)
    builder._add("segment_unmap", 20 * MIB, 20 * MIB)
    snapshot = {"segments": [{"device": 0, "address": 0, "total_size": 20 * MIB, "segment_type": "large", "is_expandable": True,
                              "blocks": [{"address": 0, "size": 20 * MIB, "state": "inactive"}]}],
                "device_traces": [builder.trace]}
    analysis = analyze(snapshot)
    assert analysis.timeline.peak_reserved == 40 * MIB
    assert analysis.timeline.end_reserved == 20 * MIB
    assert analysis.environment["expandable_segments"] is True


def test_torch_2_1_layout_without_time_and_settings_and_with_extra_keys():
    builder = SnapshotBuilder(time_us=False).segment(0, 64 * MIB)
    builder.alloc(0, 8 * MIB, user_stack(7)).alloc(8 * MIB, 8 * MIB, user_stack(8))
    snapshot = builder.snapshot()
    for entry in snapshot["device_traces"][0]:
        entry["compile_context"] = "N/A"
        entry["user_metadata"] = ""
    for block in snapshot["segments"][0]["blocks"]:  # 2.0 style: history instead of frames
        block["history"] = [{"addr": block["address"], "real_size": block["size"], "frames": block.pop("frames")}]
    analysis = analyze(snapshot)
    assert analysis.timeline.peak_allocated == 16 * MIB
    assert analysis.timeline.peak_time_us is None
    assert {line.line for line in analysis.lines} == {7, 8}


def test_pending_free_block_state_is_not_allocated():
    builder = SnapshotBuilder().segment(0, 64 * MIB).alloc(0, 8 * MIB, user_stack(7))
    snapshot = builder.snapshot(keep_last=0)
    snapshot["device_traces"][0] = [{"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "frames": []}]
    snapshot["segments"][0]["blocks"][0]["state"] = "active_awaiting_free"
    assert analyze(snapshot).timeline.start_allocated == 0
    snapshot["segments"][0]["blocks"][0]["state"] = "active_allocated"
    assert analyze(snapshot).timeline.start_allocated == 8 * MIB


def test_stacks_sharing_their_inner_frames_keep_their_own_lines():
    # The same torch frames reached from two user lines, alternating: each allocation goes to its
    # own line, whether the frame dicts are shared (as torch writes them) or copies.
    def run(copy_frames: bool) -> dict:
        builder = SnapshotBuilder().segment(0, 256 * MIB)
        for step in range(6):
            stack = user_stack(42 if step % 2 else 43)
            builder.alloc(step * MIB, MIB * (1 + step % 2), [dict(f) for f in stack] if copy_frames else stack)
        lines = analyze(builder.snapshot()).lines
        return {(line.line, line.count, line.allocated_bytes) for line in lines if line.line in (42, 43)}

    assert run(False) == run(True) == {(42, 3, 6 * MIB), (43, 3, 3 * MIB)}


def test_the_latest_oom_is_the_one_explained():
    # A script that caught its first OOM, freed, retried smaller, and died of the second one.
    builder = SnapshotBuilder().segment(0, 128 * MIB)
    builder.alloc(0, 96 * MIB, user_stack(42)).oom(request=64 * MIB, device_free=0)
    builder.free(0).alloc(0, 112 * MIB, user_stack(50)).oom(request=32 * MIB, device_free=0)
    analysis = analyze(builder.snapshot(), total_memory=128 * MIB)
    assert analysis.accounting.request == 32 * MIB
    assert analysis.accounting.allocated == 112 * MIB
    assert analysis.oom.count == 2
    assert analysis.lines[0].line == 50 and analysis.lines[0].live_bytes == 112 * MIB
