"""Snapshots and capture folders that are broken or made to hurt: every one ends in a result or one
sentence, within bounded time and memory, through the real command line (`analyze`, `report`).

Each input is built by corpus.py; the shaped ones start from real captures recorded on a GPU.
"""

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import corpus
from vramlens.capture import CaptureError, load_capture
from vramlens.capture import loader as loader_module
from vramlens.cli import main

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "server"))
MEMORY_CAP = 3 << 30  # a run that needs more than this is a failure, not a slow success
SECONDS = 30


def _capped():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def vramlens(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "vramlens", *map(str, args)], capture_output=True, text=True,
                          errors="replace", timeout=SECONDS, env=env or ENV, cwd=cwd, preexec_fn=_capped)


class Run:
    """What a command printed and returned, from a child process or from the CLI called in process."""

    def __init__(self, returncode: int, stdout: str, stderr: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def in_process(capsys, *args) -> Run:
    """The CLI's own entry point in this process: quick, for inputs that cannot block (no FIFO, no device)."""
    code = main([str(arg) for arg in args])
    out = capsys.readouterr()
    return Run(code, out.out, out.err)


def one_sentence_or_result(run) -> str:
    """'result' or 'sentence'; anything else fails the test with what it was."""
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    if run.returncode == 0:
        return "result"
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1 and lines[0].startswith("vramlens: "), run.stderr[-2000:]
    return "sentence"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    made = {}
    for name, builder in (("opcode", corpus.opcode_inputs), ("special", corpus.special_files),
                          ("shape", corpus.shape_inputs), ("capture", corpus.capture_inputs)):
        sub = folder / name
        sub.mkdir()
        made.update(builder(sub))
    return made


BLOCKING = {"FIFO", "dangling symlink", "symlink loop", "/dev/zero", "/proc/self/mem", "socket", "5 GiB file",
            "snapshot.pickle a FIFO", "capture.json a FIFO", "snapshot /dev/zero"}
ALL_INPUTS = (list(corpus.OPCODE_PICKLES) + ["FIFO", "folder named like a snapshot", "dangling symlink", "symlink loop",
              "/dev/zero", "/proc/self/mem", "socket", "5 GiB file"])


@pytest.mark.parametrize("name", ALL_INPUTS)
def test_opcodes_and_special_files_are_one_sentence(built, name, capsys):
    # In a child process, with a memory cap and a timeout, where a regression could block or grow.
    cli = vramlens if name in BLOCKING or name.startswith(("LONG_BINPUT", "BYTEARRAY8")) else lambda *a: in_process(capsys, *a)
    assert one_sentence_or_result(cli("analyze", built[name])) == "sentence"


SHAPES = ["top level a list", "top level a string", "segments a string", "trace entry a string", "size of 2**100",
          "negative size", "size a float", "size a bool", "address a string", "frames a dict", "frame filename a number",
          "time of 2**80", "segment total of 2**100", "OOM request of 2**100", "x = [x, x] as the frames",
          "one 100,000-frame stack shared by 5,000 entries", "one entry repeated 10,000,000 times",
          "deeply nested lists (1,000,000)"]


@pytest.mark.parametrize("name", SHAPES)
def test_snapshots_of_the_wrong_shape_are_one_sentence(built, name, capsys):
    run = in_process(capsys, "analyze", built[name])
    assert one_sentence_or_result(run) == "sentence"
    assert "layout is not one this version understands" not in run.stderr  # the boundary said it, not the last net


@pytest.mark.parametrize("name", ["allocator_settings nested 100,000 deep", "allocator_settings referencing itself",
                                  "x = [x, x] thirty times (431 bytes)"])
def test_settings_that_are_no_settings_are_ignored_with_a_note(built, name, capsys):
    for command in (("analyze", "--json"), ("analyze",), ("report",)):
        run = in_process(capsys, *command, built[name])
        assert one_sentence_or_result(run) == "result"
    assert "allocator_settings" in in_process(capsys, "analyze", built[name]).stdout


CAPTURE_SENTENCES = {
    "capture.json top level a list": "not a capture written by vramlens (it holds a list",
    "capture.json top level a string": "it holds text",
    "capture.json top level a number": "it holds a number",
    "capture.json top level null": "it holds null",
    "snapshot named by a number": "names its snapshot as 5, not a file name",
    "snapshot named by a list": "names its snapshot as [",
    "snapshot ../../etc/passwd": "names a snapshot outside its folder",
    "snapshot /dev/zero": "names a snapshot outside its folder",
    "capture.json nested 100,000 deep": "it nests too deeply",
    "an integer of 5,000 digits": "is damaged and cannot be read",
    "snapshot.pickle missing": "is incomplete: it names its snapshot snapshot.pickle, but there is no snapshot.pickle",
    "snapshot.pickle a FIFO": "is a named pipe (FIFO), not a file",
    "snapshot.pickle a folder": "is a folder, not a file",
    "snapshot.pickle a dangling symlink": "is a symbolic link to",
    "capture.json a FIFO": "capture.json cannot be read: ",
}


@pytest.mark.parametrize("name", list(CAPTURE_SENTENCES))
def test_broken_capture_folders_say_what_is_wrong(built, name, capsys):
    run = vramlens("analyze", built[name]) if name in BLOCKING else in_process(capsys, "analyze", built[name])
    assert one_sentence_or_result(run) == "sentence"
    assert CAPTURE_SENTENCES[name] in run.stderr
    assert "before any CUDA allocation" not in run.stderr  # the misleading message of old


WRONG_FIELDS = {
    "a number of 1e400": "duration_s", "an integer of 1,000 digits where seconds go": "duration_s", "OOM sizes of 2**100": "oom.requested", "argv of numbers": "argv[0]",
    "script a list": "script", "memory_limit a string": "memory_limit", "memory_limit fraction a string": "memory_limit.bytes",
    "traceback a number": "exception.traceback", "exception frames of strings": "exception.frames[0]",
    "experiment figures of strings": "experiment.sentence", "distributed a string": "distributed",
    "distributed rank a string": "distributed.rank", "nvml samples of numbers": "nvml.samples[0]",
    "environment a list": "environment", "interventions of strings": "interventions[0]",
    "stats of strings": "stats.peak_allocated",
}


@pytest.mark.parametrize("name", list(WRONG_FIELDS))
def test_fields_of_the_wrong_type_read_as_unknown_and_are_named(built, name, capsys):
    for command in (("analyze",), ("analyze", "--json"), ("report",), ("report", "--redact")):
        run = in_process(capsys, *command, built[name])
        assert one_sentence_or_result(run) == "result", command
    assert f"{WRONG_FIELDS[name]} (" in in_process(capsys, "analyze", built[name]).stdout


def test_the_folder_walk_for_ranks_is_bounded(tmp_path, capsys):
    walks = corpus.folder_walks(tmp_path)
    for name, path in walks.items():
        if "not UTF-8" in name:  # names no encoding can print: a result or a sentence, each name written out
            run = vramlens("analyze", path, env=dict(ENV, PYTHONIOENCODING="utf-8"))  # strict, as in a UTF-8 terminal
            assert one_sentence_or_result(run) == ("result" if "ranks" in name else "sentence"), (name, run.stderr[-500:])
            continue
        run = in_process(capsys, "analyze", path)
        assert one_sentence_or_result(run) == "sentence", name
        assert "not a capture" in run.stderr or "holds no ranks" in run.stderr


def test_a_ranks_folder_with_a_bad_distributed_record_still_compares_the_others(tmp_path, capsys):
    source = ROOT / "tests" / "fixtures" / "ranks" / "one_gpu_gloo" / "ddp_uneven"
    import shutil
    import json

    shutil.copytree(source, tmp_path / "job")
    meta_path = tmp_path / "job" / "rank-1" / "capture.json"
    meta = json.loads(meta_path.read_text())
    meta["distributed"] = dict(meta["distributed"], world_size="two", hostname=["x"])
    meta_path.write_text(json.dumps(meta))
    run = in_process(capsys, "analyze", tmp_path / "job")
    assert one_sentence_or_result(run) == "result"


def test_an_unreadable_snapshot_is_said_so(tmp_path, monkeypatch):
    """Permission denied (simulated: this test may run as root, who reads every file)."""
    path = tmp_path / "locked.pickle"
    path.write_bytes(corpus.REAL_PICKLE.read_bytes())

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("vramlens.regular_files.os.open", denied)
    with pytest.raises(CaptureError, match="cannot be read: permission denied"):
        load_capture(path)


def test_the_memory_a_pickle_may_take_is_bounded(tmp_path):
    """A 9-byte pickle asks for a 16 GiB memo table: MemoryError under the ceiling, one sentence."""
    path = tmp_path / "memo.pickle"
    path.write_bytes(corpus.OPCODE_PICKLES["LONG_BINPUT at 2**31 (9 bytes)"])
    with pytest.raises(CaptureError, match="would need more than .* of memory to load"):
        load_capture(path)
    assert loader_module.SNAPSHOT_LIMIT == 4 << 30
