"""The recording core that scripts and notebook kernels share: what a capture keeps when parts of it fail."""

import json

from vramlens.agent.recording_core import NO_OOM_CENSUS, RecordingCore


class Unpicklable:
    def __reduce__(self):
        raise TypeError("not this one")


def core_with_meta():
    core = RecordingCore("python", 1000, free_stacks=False)
    core.meta = core.base_meta("run-1", "/work/train.py", ["train.py"], "/work", True, {"alloc_env": {}}, None)
    return core


def test_a_snapshot_that_cannot_be_written_still_leaves_the_facts(tmp_path):
    core = core_with_meta()
    meta = core.ending_meta("completed", 0, None, None, [])
    failure = core.publish(str(tmp_path / "cap"), meta, {"segments": [Unpicklable()]})
    assert failure is None
    written = json.loads((tmp_path / "cap" / "capture.json").read_text())
    assert written["snapshot"] is None and written["run_id"] == "run-1" and written["status"] == "completed"
    assert any("The snapshot could not be written (TypeError: not this one)" in note for note in written["notes"])


def test_a_capture_that_cannot_be_written_at_all_is_one_sentence(tmp_path):
    (tmp_path / "file").write_text("in the way")
    core = core_with_meta()
    failure = core.publish(str(tmp_path / "file" / "cap"), core.ending_meta("completed", 0, None, None, []), None)
    assert failure.startswith(f"The capture could not be written to {tmp_path / 'file' / 'cap'} (")


def test_the_ending_and_an_unreadable_allocator_keep_the_runs_facts():
    core = core_with_meta()
    core.notes.append("an earlier note")
    meta = core.ending_meta("oom", 1, {"type": "OutOfMemoryError"}, 12.5, list(core.notes))
    assert (meta["status"], meta["exit_code"], meta["exception"]["epoch"]) == ("oom", 1, 12.5)
    assert meta["duration_s"] >= 0 and meta["script"] == "/work/train.py"
    unreadable = core.unreadable_meta("error", 1, RuntimeError("gone"))
    assert unreadable["notes"] == ["an earlier note", "The allocator state could not be read (RuntimeError: gone)."]
    assert "status" not in core.meta  # the base meta is never edited by an ending


def test_the_census_of_an_oom_is_the_observers_and_a_missing_one_is_said():
    class Oom:
        census = None

    class Recorder:
        oom = Oom()

    core = core_with_meta()
    core.recorder = Recorder()
    taken = []
    meta = {"snapshot_moment": "oom", "notes": []}
    assert core.census_at(meta, taken.append) is None
    assert meta["notes"] == [NO_OOM_CENSUS] and taken == []  # never a census of after the unwind in its place
    Oom.census = {"moment": "oom"}
    assert core.census_at({"snapshot_moment": "oom"}, taken.append) == {"moment": "oom"}
    assert core.census_at({"snapshot_moment": "end"}, lambda moment: {"moment": moment}) == {"moment": "end"}
