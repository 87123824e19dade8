"""The snapshot loader refuses anything but plain data, and says so in one sentence."""

import os
import pickle
import shutil

import pytest

from vramlens.capture import CaptureError, load_capture, load_snapshot

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "captures")


class _CreatesFile:
    """Unpickling this with a normal unpickler would create a file: proof of execution."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickle_with_a_global_is_refused_and_never_executed(tmp_path):
    marker = tmp_path / "executed"
    evil = tmp_path / "evil.pickle"
    evil.write_bytes(pickle.dumps({"segments": [], "device_traces": [[_CreatesFile(str(marker))]]}))
    with pytest.raises(CaptureError, match="Refused to load the snapshot"):
        load_snapshot(evil)
    assert not marker.exists()
    # The same bytes under a normal unpickler do execute: the test really holds a payload.
    pickle.loads(evil.read_bytes())
    assert marker.exists()


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_every_protocol_from_2_to_5_loads(tmp_path, protocol):
    data = {"segments": [{"address": 1, "blocks": []}], "device_traces": [[{"action": "alloc", "addr": 1, "size": 512}]]}
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps(data, protocol=protocol))
    assert load_snapshot(path) == data


def test_protocol_0_and_1_are_not_snapshots(tmp_path):
    path = tmp_path / "old.pickle"
    path.write_bytes(pickle.dumps({"segments": []}, protocol=0))
    with pytest.raises(CaptureError, match="not a PyTorch memory snapshot"):
        load_snapshot(path)


def test_truncated_real_snapshot_is_one_clear_error(tmp_path):
    real = open(os.path.join(FIXTURES, "server_dump.pickle"), "rb").read()
    for cut in (3, len(real) // 2, len(real) - 1):
        path = tmp_path / f"cut{cut}.pickle"
        path.write_bytes(real[:cut])
        with pytest.raises(CaptureError, match="truncated or damaged"):
            load_snapshot(path)


def test_garbage_and_empty_files(tmp_path):
    for name, content in (("garbage", os.urandom(4096)), ("empty", b""), ("text", b"hello world\n")):
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(CaptureError):
            load_snapshot(path)


def test_a_pickle_of_something_else_is_not_a_snapshot(tmp_path):
    path = tmp_path / "list.pickle"
    path.write_bytes(pickle.dumps([1, 2, 3], protocol=4))
    with pytest.raises(CaptureError, match="not a PyTorch memory snapshot"):
        load_snapshot(path)


def test_real_capture_folder_and_its_json_load_the_same(tmp_path):
    folder = os.path.join(FIXTURES, "working_set")
    by_folder = load_capture(folder)
    by_json = load_capture(os.path.join(folder, "capture.json"))
    assert by_folder.meta["status"] == "oom" and not by_folder.is_raw_snapshot
    assert by_folder.snapshot == by_json.snapshot
    assert len(by_folder.snapshot["device_traces"][0]) > 0


def test_raw_snapshot_has_no_meta():
    capture = load_capture(os.path.join(FIXTURES, "server_dump.pickle"))
    assert capture.is_raw_snapshot and capture.snapshot["device_traces"]


def test_folder_without_capture_json_and_damaged_json(tmp_path):
    with pytest.raises(CaptureError, match="not a capture"):
        load_capture(tmp_path)
    shutil.copytree(os.path.join(FIXTURES, "no_problem"), tmp_path / "c")
    (tmp_path / "c" / "capture.json").write_text("{ broken")
    with pytest.raises(CaptureError, match="damaged"):
        load_capture(tmp_path / "c")
    with pytest.raises(CaptureError, match="Nothing at"):
        load_capture(tmp_path / "missing")


def test_agent_writes_the_names_the_loader_reads(tmp_path):
    from vramlens.agent import capture_writer
    from vramlens.capture import format as capture_format

    for name in ("FORMAT_NAME", "FORMAT_VERSION", "META_FILE", "SNAPSHOT_FILE"):
        assert getattr(capture_writer, name) == getattr(capture_format, name)
    snapshot = {"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 512, "frames": []}]]}
    capture_writer.write_capture(str(tmp_path / "cap"), {"status": "completed"}, snapshot)
    loaded = load_capture(tmp_path / "cap")
    assert loaded.snapshot == snapshot and loaded.meta["status"] == "completed"
    assert not [p.name for p in tmp_path.iterdir() if p.name != "cap"]  # no staging left behind
    capture_writer.write_capture(str(tmp_path / "cap"), {"status": "no_cuda"}, None)
    replaced = load_capture(tmp_path / "cap")
    assert replaced.meta["snapshot"] is None and replaced.snapshot["device_traces"] == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap"]


def test_a_newer_pickle_protocol_is_named(tmp_path):
    path = tmp_path / "future.pickle"
    path.write_bytes(bytes([0x80, pickle.HIGHEST_PROTOCOL + 1]) + b"rest")
    with pytest.raises(CaptureError, match=f"protocol {pickle.HIGHEST_PROTOCOL + 1}, newer than"):
        load_snapshot(path)


def test_captures_are_readable_by_others_as_the_umask_allows(tmp_path):
    from vramlens.agent import capture_writer

    previous = os.umask(0o022)
    try:
        capture_writer.write_capture(str(tmp_path / "cap"), {"status": "completed"}, {"segments": [], "device_traces": []})
    finally:
        os.umask(previous)
    assert (tmp_path / "cap").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "cap" / "capture.json").stat().st_mode & 0o777 == 0o644
