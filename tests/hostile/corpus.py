"""Hostile and broken inputs, built on disk: the regression tests here and benchmarks/hostile_inputs.py
run the same ones.

Each builder writes its input under a folder and returns the path to give the command. The
snapshot-shaped ones start from REAL captures recorded on a GPU (tests/fixtures/captures) and change
only what the case is about; the opcode ones are a few hand-written pickle bytes, since no tool
writes them (that is the point).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import socket
import struct
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "tests" / "fixtures" / "captures"
REAL_FOLDER = CAPTURES / "working_set"  # an OOM in loss.backward(), recorded on an H200
REAL_PICKLE = CAPTURES / "server_dump.pickle"  # a raw _dump_snapshot of a server


def real_snapshot() -> dict:
    with open(REAL_FOLDER / "snapshot.pickle", "rb") as file:
        return pickle.load(file)


def real_meta() -> dict:
    return json.loads((REAL_FOLDER / "capture.json").read_text())


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def _dump(folder: Path, name: str, value, protocol: int = 4) -> Path:
    return _write(folder, name, pickle.dumps(value, protocol=protocol))


# -- pickle opcodes the loader's error handling has to cover ----------------------------------------
def _q(value: int) -> bytes:
    return struct.pack("<Q", value)


OPCODE_PICKLES = {
    "BUILD on None": b"\x80\x02N}b.",
    "BUILD on a list": b"\x80\x02]}b.",
    "FRAME of 2**62 bytes": b"\x80\x04\x95" + _q(2**62) + b"N.",
    "FRAME of 2**64-1 bytes": b"\x80\x04\x95" + _q(2**64 - 1) + b"N.",
    "BINUNICODE8 of 2**62 bytes": b"\x80\x04\x8d" + _q(2**62) + b"x.",
    "BINUNICODE8 of 2**64-1 bytes": b"\x80\x04\x8d" + _q(2**64 - 1) + b"x.",
    "BYTEARRAY8 of 4 GiB": b"\x80\x05\x96" + _q(2**32) + b"x.",
    "BINBYTES8 of 2**63 bytes": b"\x80\x04\x8e" + _q(2**63) + b"x.",
    "LONG4 of 2 GiB": b"\x80\x02\x8b" + struct.pack("<i", 2**31 - 1) + b"\x01.",
    "LONG_BINPUT at 2**31 (9 bytes)": b"\x80\x04Nr\xff\xff\xff\x7f.",
    "LONG_BINPUT at 2**29": b"\x80\x04Nr\x00\x00\x00\x20.",
    "BINGET of a missing memo": b"\x80\x02h\x05.",
    "APPEND on an empty stack": b"\x80\x02a.",
    "REDUCE of None": b"\x80\x02N)R.",
    "EXT1 code": b"\x80\x02\x82\x01.",
    "BINPERSID": b"\x80\x02X\x01\x00\x00\x00aQ.",
    "GLOBAL os.system": b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00idR.",
    "STACK_GLOBAL builtins.eval": b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93.",
    "INST os.system": b"\x80\x02(X\x02\x00\x00\x00idios\nsystem\n.",
    "unhashable dict key": b"\x80\x02}]Ns.",
    "unhashable set item": b"\x80\x04\x8f(]\x90.",
    "protocol 0": pickle.dumps({"segments": []}, protocol=0),
    "protocol 6 header": b"\x80\x06N.",
    "empty file": b"",
    "text file": b"hello world\n",
    "truncated real snapshot": None,  # filled in below from the real pickle
}


def opcode_inputs(folder: Path) -> dict[str, Path]:
    real = REAL_PICKLE.read_bytes()
    made = {}
    for number, (name, data) in enumerate(OPCODE_PICKLES.items()):
        made[name] = _write(folder, f"opcode-{number}.pickle", real[: len(real) // 2] if data is None else data)
    return made


# -- files that are not regular files ----------------------------------------------------------------
def special_files(folder: Path) -> dict[str, Path]:
    made = {}
    fifo = folder / "fifo.pickle"
    os.mkfifo(fifo)
    made["FIFO"] = fifo
    sub = folder / "a-folder.pickle"
    sub.mkdir()
    made["folder named like a snapshot"] = sub
    dangling = folder / "dangling.pickle"
    dangling.symlink_to(folder / "nowhere.pickle")
    made["dangling symlink"] = dangling
    loop = folder / "loop.pickle"
    loop.symlink_to(loop)
    made["symlink loop"] = loop
    made["/dev/zero"] = Path("/dev/zero")
    made["/proc/self/mem"] = Path("/proc/self/mem")
    sock_path = folder / "sock.pickle"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    server.close()
    made["socket"] = sock_path
    unreadable = _write(folder, "unreadable.pickle", REAL_PICKLE.read_bytes())
    unreadable.chmod(0)
    made["no read permission"] = unreadable
    sparse = folder / "sparse-5GiB.pickle"
    with open(sparse, "wb") as file:
        file.write(b"\x80\x04")
        file.truncate(5 << 30)
    made["5 GiB file"] = sparse
    return made


# -- snapshots of the right syntax and the wrong shape ------------------------------------------------
def _with_entry(snapshot: dict, **changes) -> dict:
    trace = snapshot["device_traces"][0]
    first_alloc = next(entry for entry in trace if entry["action"] == "alloc")
    first_alloc.update(changes)
    return snapshot


def _oom_entry(snapshot: dict) -> dict:
    return next(entry for entry in snapshot["device_traces"][0] if entry["action"] == "oom")


def _shared_lists(depth: int) -> list:
    x: list = []
    for _ in range(depth):
        x = [x, x]
    return x


def _nested_settings_bytes(depth: int) -> bytes:
    """A snapshot whose allocator_settings hold lists nested ``depth`` deep (no pickler writes that)."""
    body = pickle.dumps({"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 512, "stream": 0,
                                                             "frames": []}]]}, protocol=4)
    assert body.endswith(b"\x94.") or body.endswith(b".")
    prefix = body[:-1]  # the dict on the stack
    key = b"\x8c\x12allocator_settings"
    nested = b"]" * depth + b"a" * (depth - 1)
    return prefix + key + nested + b"s."


def shape_inputs(folder: Path) -> dict[str, Path]:
    made = {}
    made["top level a list"] = _dump(folder, "list.pickle", [1, 2, 3])
    made["top level a string"] = _dump(folder, "str.pickle", "segments")
    made["segments a string"] = _dump(folder, "segstr.pickle", {"segments": "x", "device_traces": []})
    made["trace entry a string"] = _dump(folder, "entrystr.pickle", {"segments": [], "device_traces": [["alloc"]]})
    made["size of 2**100"] = _dump(folder, "size100.pickle", _with_entry(real_snapshot(), size=2**100))
    made["negative size"] = _dump(folder, "sizeneg.pickle", _with_entry(real_snapshot(), size=-4096))
    made["size a float"] = _dump(folder, "sizefloat.pickle", _with_entry(real_snapshot(), size=1e300))
    made["size a bool"] = _dump(folder, "sizebool.pickle", _with_entry(real_snapshot(), size=True))
    made["address a string"] = _dump(folder, "addrstr.pickle", _with_entry(real_snapshot(), addr="0x7f"))
    made["frames a dict"] = _dump(folder, "framesdict.pickle", _with_entry(real_snapshot(), frames={"filename": "x"}))
    made["frame filename a number"] = _dump(folder, "fileint.pickle",
                                            _with_entry(real_snapshot(), frames=[{"filename": 5, "line": 1, "name": "f"}]))
    made["time of 2**80"] = _dump(folder, "time80.pickle", _with_entry(real_snapshot(), time_us=2**80))
    snapshot = real_snapshot()
    snapshot["segments"][0]["total_size"] = 2**100
    made["segment total of 2**100"] = _dump(folder, "segtotal.pickle", snapshot)
    snapshot = real_snapshot()
    _oom_entry(snapshot)["size"] = 2**100
    made["OOM request of 2**100"] = _dump(folder, "oom100.pickle", snapshot)
    made["allocator_settings nested 100,000 deep"] = _write(folder, "deep-settings.pickle", _nested_settings_bytes(100_000))
    circular: dict = {}
    circular["self"] = circular
    made["allocator_settings referencing itself"] = _dump(folder, "circular.pickle", dict(real_snapshot(), allocator_settings=circular))
    made["x = [x, x] thirty times (431 bytes)"] = _dump(folder, "shared-lists.pickle",
                                                       dict(real_snapshot(), allocator_settings={"a": _shared_lists(30)}))
    made["x = [x, x] as the frames"] = _dump(folder, "shared-frames-lists.pickle", _with_entry(real_snapshot(), frames=_shared_lists(30)))
    huge_stack = [{"filename": "/opt/conda/lib/python3.12/site-packages/torch/x.py", "line": i, "name": "f"} for i in range(100_000)]
    trace = [{"action": "alloc", "addr": i * 512, "size": 512, "stream": 0, "frames": huge_stack} for i in range(5000)]
    made["one 100,000-frame stack shared by 5,000 entries"] = _dump(folder, "shared-stack.pickle",
                                                                   {"segments": [], "device_traces": [trace]})
    entry = {"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "frames": []}
    made["one entry repeated 10,000,000 times"] = _dump(folder, "repeated-entry.pickle",
                                                       {"segments": [], "device_traces": [[entry] * 10_000_000]})
    made["deeply nested lists (1,000,000)"] = _write(folder, "deep-lists.pickle", b"\x80\x04" + b"]" * 1_000_000 + b"a" * 999_999 + b".")
    return made


# -- capture folders ----------------------------------------------------------------------------------
_REAL = object()


def _capture(folder: Path, name: str, meta=_REAL, meta_text: str | None = None, snapshot: bool = True) -> Path:
    target = folder / name
    target.mkdir()
    if snapshot:
        shutil.copy(REAL_FOLDER / "snapshot.pickle", target / "snapshot.pickle")
    text = meta_text if meta_text is not None else json.dumps(real_meta() if meta is _REAL else meta)
    (target / "capture.json").write_text(text)
    return target


def _changed_meta(**changes) -> dict:
    meta = real_meta()
    meta.update(changes)
    return meta


def capture_inputs(folder: Path) -> dict[str, Path]:
    made = {}
    for label, value in (("a list", [1]), ("a string", "capture"), ("a number", 5), ("null", None)):
        made[f"capture.json top level {label}"] = _capture(folder, f"top-{label.split()[-1]}", value)
    made["snapshot named by a number"] = _capture(folder, "snap-number", _changed_meta(snapshot=5))
    made["snapshot named by a list"] = _capture(folder, "snap-list", _changed_meta(snapshot=["snapshot.pickle"]))
    made["snapshot ../../etc/passwd"] = _capture(folder, "snap-escape", _changed_meta(snapshot="../../etc/passwd"))
    made["snapshot /dev/zero"] = _capture(folder, "snap-dev-zero", _changed_meta(snapshot="/dev/zero"))
    made["capture.json nested 100,000 deep"] = _capture(folder, "nested", meta_text='{"format": "vramlens-capture", "x": '
                                                         + "[" * 100_000 + "]" * 100_000 + "}")
    made["a number of 1e400"] = _capture(folder, "inf-number", meta_text=json.dumps(_changed_meta(duration_s=1))
                                         .replace('"duration_s": 1', '"duration_s": 1e400'))
    made["an integer of 1,000 digits where seconds go"] = _capture(folder, "long-seconds", meta_text=json.dumps(
        _changed_meta(duration_s=1)).replace('"duration_s": 1', '"duration_s": 1' + "0" * 1000))
    made["an integer of 5,000 digits"] = _capture(folder, "long-number", meta_text=json.dumps(_changed_meta(pid=1))
                                                  .replace('"pid": 1', '"pid": 1' + "0" * 5000))
    made["OOM sizes of 2**100"] = _capture(folder, "oom-huge", _changed_meta(oom=dict(real_meta()["oom"], requested=2**100, allocated=2**100)))
    made["argv of numbers"] = _capture(folder, "argv", _changed_meta(argv=[1, 2, {"x": 3}]))
    made["script a list"] = _capture(folder, "script", _changed_meta(script=["/x.py"]))
    made["memory_limit a string"] = _capture(folder, "limit", _changed_meta(memory_limit="24GiB"))
    made["memory_limit fraction a string"] = _capture(folder, "limit2", _changed_meta(memory_limit={"bytes": "5", "fraction": "x"}))
    made["traceback a number"] = _capture(folder, "traceback", _changed_meta(exception=dict(real_meta()["exception"], traceback=5)))
    made["exception frames of strings"] = _capture(folder, "exframes", _changed_meta(exception=dict(real_meta()["exception"], frames=["x"])))
    made["experiment figures of strings"] = _capture(folder, "experiment", _changed_meta(experiment={
        "sentence": 5, "variants": [{"label": 1, "ooms": "3", "runs": None, "peak_allocated": "many"}], "stopped": ["no"]}))
    made["distributed a string"] = _capture(folder, "distributed", _changed_meta(distributed="rank 0"))
    made["distributed rank a string"] = _capture(folder, "distributed2", _changed_meta(distributed={"rank": "0", "world_size": "2"}))
    made["nvml samples of numbers"] = _capture(folder, "nvml", _changed_meta(nvml={"samples": [1, "x", {"epoch": "now"}]}))
    made["environment a list"] = _capture(folder, "env", _changed_meta(environment=[1]))
    made["interventions of strings"] = _capture(folder, "interventions", _changed_meta(interventions=["x", {"setting": 5}]))
    made["stats of strings"] = _capture(folder, "stats", _changed_meta(stats={"peak_allocated": "1"}))
    missing = _capture(folder, "snap-missing", snapshot=False)
    made["snapshot.pickle missing"] = missing
    fifo = _capture(folder, "snap-fifo", snapshot=False)
    os.mkfifo(fifo / "snapshot.pickle")
    made["snapshot.pickle a FIFO"] = fifo
    sub = _capture(folder, "snap-folder", snapshot=False)
    (sub / "snapshot.pickle").mkdir()
    made["snapshot.pickle a folder"] = sub
    dangling = _capture(folder, "snap-dangling", snapshot=False)
    (dangling / "snapshot.pickle").symlink_to(folder / "nowhere")
    made["snapshot.pickle a dangling symlink"] = dangling
    fifo_meta = folder / "meta-fifo"
    fifo_meta.mkdir()
    os.mkfifo(fifo_meta / "capture.json")
    made["capture.json a FIFO"] = fifo_meta
    return made


def _undecodable_names(folder: Path) -> Path:
    """A folder like a machine's own (no capture), whose entries' names are not valid UTF-8."""
    folder.mkdir()
    raw = os.fsencode(folder)
    for name in (b"caf\xe9", b"\xff\xfe", b"\xed\xa0\x80-surrogate"):
        os.mkdir(raw + b"/" + name)
        with open(raw + b"/" + name + b"/notes\xe9.txt", "wb") as handle:
            handle.write(b"x")
    return folder


def _undecodable_ranks(folder: Path) -> Path:
    """A torchrun job whose ranks lie below a folder, and one rank's folder, named in Latin-1."""
    import shutil
    job = REPO / "tests" / "fixtures" / "ranks" / "one_gpu_gloo" / "ddp_uneven"
    raw = os.fsencode(folder) + b"/job-\xe9t\xe9"
    shutil.copytree(os.fsdecode(job), os.fsdecode(raw))
    ranks = sorted(name for name in os.listdir(raw) if name.startswith(b"rank-"))
    os.rename(raw + b"/" + ranks[0], raw + b"/" + ranks[0] + b"-\xff")
    return Path(os.fsdecode(raw))  # the job itself: its name is printed


# -- folders the ranks' walk has to bound --------------------------------------------------------------
def folder_walks(folder: Path) -> dict[str, Path]:
    made = {"names that are not UTF-8": _undecodable_names(folder / "odd-names"),
            "ranks in a folder whose name is not UTF-8": _undecodable_ranks(folder / "odd-ranks")}
    loops = folder / "loops"
    loops.mkdir()
    for number in range(20):
        (loops / f"link{number}").symlink_to(loops)
    made["a folder of 20 symlinks to itself"] = loops
    deep = folder / "deep"
    current = deep
    for number in range(40):
        current = current / f"d{number}"
    current.mkdir(parents=True)
    made["40 folders deep"] = deep
    wide = folder / "wide"
    wide.mkdir()
    for number in range(12_000):
        (wide / f"f{number}").mkdir()
    made["12,000 folders"] = wide
    return made
