"""Equal stacks share one frames list once loaded, and sharing neither hides a bad frame nor changes a result."""

import copy
import json
import os
import pickle

import pytest

from vramlens.analysis import analyze_capture, to_json
from vramlens.capture import Capture, CaptureError, load_capture, load_snapshot
from vramlens.capture import stacks as stacks_module
from vramlens.capture.stacks import SharedStacks

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")


def frame(filename, line, name="f"):
    return {"filename": filename, "line": line, "name": name}


def entry(action, addr, frames, size=512):
    return {"action": action, "addr": addr, "size": size, "frames": frames}


def write(tmp_path, trace):
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [trace]}, protocol=4))
    return path


def test_entries_with_equal_stacks_share_one_list_and_others_keep_theirs(tmp_path):
    op, call, script = frame("/t/linear.py", 1), frame("/t/module.py", 2), frame("/w/train.py", 3)
    other = frame("/t/gelu.py", 4)
    trace = [entry("alloc", 1, [op, call, script]), entry("alloc", 2, [other, call, script]),
             entry("alloc", 3, [op, call, script]), entry("free_requested", 1, [op, call, script]),
             entry("alloc", 4, [])]
    loaded = load_snapshot(write(tmp_path, trace))["device_traces"][0]
    assert loaded[0]["frames"] is loaded[2]["frames"] is loaded[3]["frames"]
    assert loaded[1]["frames"] is not loaded[0]["frames"]
    assert [f["filename"] for f in loaded[1]["frames"]] == ["/t/gelu.py", "/t/module.py", "/w/train.py"]
    assert loaded[4]["frames"] == []


def test_a_bad_frame_in_a_stack_of_its_own_is_refused(tmp_path):
    good = [frame("/t/a.py", 1), frame("/w/train.py", 2)]
    bad = [frame("/t/a.py", 1), frame("/w/train.py", "two")]
    with pytest.raises(CaptureError, match="frame without a text filename, a whole line number"):
        load_snapshot(write(tmp_path, [entry("alloc", 1, good), entry("alloc", 2, bad)]))


def test_a_stack_equal_only_in_value_is_replaced_by_the_checked_one(tmp_path):
    """``1.0 == 1``: a stack whose frame differs from a known one only by such a value is given the
    known (checked) list, so no frame of the wrong type is left for later stages to read."""
    inner = [frame(f"/t/m{i}.py", i) for i in range(10)]
    twin = list(inner)
    twin[9] = frame("/t/m9.py", 9.0)  # a position the sample does not look at: found equal, not identical
    loaded = load_snapshot(write(tmp_path, [entry("alloc", 1, inner), entry("alloc", 2, twin)]))["device_traces"][0]
    for item in loaded:
        assert all(type(f["line"]) is int for f in item["frames"])


def test_stacks_colliding_under_one_sample_are_told_apart_frame_by_frame():
    shared = [frame(f"/t/x{i}.py", i) for i in range(40)]
    stacks = []
    for variant in range(3 * stacks_module.MAX_CANDIDATES):  # all alike but at position 30, which no sample reads
        frames = list(shared)
        frames[30] = frame("/w/train.py", variant)
        stacks.append(frames)
    table = SharedStacks()
    assert all(table.share(frames) is frames for frames in stacks)  # each one new
    assert all(table.share(list(frames)) is frames for frames in stacks)  # a copy finds its own, not a neighbour
    assert table.distinct == stacks


def test_past_the_known_limit_stacks_are_kept_as_they_are_and_still_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(stacks_module, "MAX_KNOWN", 50)
    trace = [entry("alloc", i, [frame(f"/t/f{i}.py", i), frame("/w/train.py", 1)]) for i in range(200)]
    trace.append(entry("alloc", 999, [frame("/t/late.py", None), frame("/w/train.py", 1)]))
    with pytest.raises(CaptureError, match="whole line number"):
        load_snapshot(write(tmp_path, trace))
    loaded = load_snapshot(write(tmp_path, trace[:-1]))["device_traces"][0]
    assert [item["frames"][0]["filename"] for item in loaded] == [f"/t/f{i}.py" for i in range(200)]


@pytest.mark.parametrize("capture", ["realworld/nanogpt_too_large/capture", "captures/working_set_stacks_all",
                                     "realworld/hf_generate_kv_cache/capture", "captures/notebook_kept_outputs"])
def test_the_analysis_is_the_same_whether_frames_are_shared_or_not(capture):
    """A capture loaded as usual (one list per stack, torch's shared frame dicts) and a copy where
    every entry has frames of its own, as a snapshot built by hand would: the same analysis."""
    loaded = load_capture(os.path.join(FIXTURES, capture))
    unshared = copy.deepcopy(loaded.snapshot)
    for trace in unshared["device_traces"]:
        for item in trace or ():
            item["frames"] = copy.deepcopy(item.get("frames"))
    total = 80 << 30
    shared_result = to_json(analyze_capture(loaded, total_memory=total))
    alone = Capture(snapshot=unshared, meta=loaded.meta, path=loaded.path, census=loaded.census,
                    peak_census=loaded.peak_census, notes=list(loaded.notes), traces=loaded.traces)
    assert json.dumps(to_json(analyze_capture(alone, total_memory=total)), sort_keys=True) == \
        json.dumps(shared_result, sort_keys=True)
    distinct = {id(item["frames"]) for item in loaded.snapshot["device_traces"][0] if item.get("frames")}
    framed = sum(1 for item in loaded.snapshot["device_traces"][0] if item.get("frames"))
    assert len(distinct) < framed / 2  # the loaded trace does share its lists
