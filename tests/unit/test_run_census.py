"""The census through `vramlens run`: written at the OOM, at the end and on demand, beside the
snapshot of the same moment, and not at all with --no-census.

The script runs through the real agent and runner; torch is the stand-in from tests/agent_double
(a pretend CUDA device whose tensors the census reads like real ones). The same is checked with
the real torch on a GPU by tests/gpu/test_census_on_gpu.py.
"""

import json
import os
import signal
import time

from test_run_process import meta_of, start_vramlens, vramlens, write

from vramlens.capture import load_capture
from vramlens.capture.format import FORMAT_VERSION

MIB = 2**20


def census_of(capture, name="census.json"):
    with open(os.path.join(capture, name)) as census:
        return json.load(census)


def holder(census, path):
    return next(h for h in census["holders"] if h["path"] == path)


def test_at_the_oom_the_census_names_the_holders_and_the_step_frame(tmp_path):
    write(tmp_path, "train.py", (
        "import torch\n"
        "history = [torch.empty(64 * 2**20, device='cuda') for _ in range(3)]\n"
        "class Trainer:\n    pass\n"
        "trainer = Trainer()\ntrainer.val_outputs = [torch.empty(2**20, device='cuda')]\n"
        "def step():\n"
        "    batch = torch.empty(8 * 2**20, device='cuda')\n"
        "    return torch.empty(3 * 2**30, device='cuda')\n"
        "step()\n"))
    run = vramlens("run", "--memory-limit", "1GiB", "-o", tmp_path / "cap", "train.py", cwd=tmp_path)
    assert run.returncode == 1
    meta = meta_of(tmp_path / "cap")
    assert meta["version"] == FORMAT_VERSION and meta["census"] == "census.json" and meta["snapshot_moment"] == "oom"
    assert meta["recording"]["census"] is True
    census = census_of(tmp_path / "cap")
    assert census["moment"] == "oom" and census["complete"] is True
    assert census["thread"] == {"name": "MainThread", "main": True}
    assert [frame["name"] for frame in census["main_stack"]][:2] == ["<module>", "step"]
    assert census["main_stack"][1]["line"] == 9 and census["main_stack"][0]["filename"].endswith("train.py")
    assert census["device"] == {"index": 0, "allocated": 3 * 64 * MIB + MIB + 8 * MIB,
                                "reserved": 3 * 64 * MIB + MIB + 8 * MIB}
    history = holder(census, "__main__.history")
    assert history["container"]["length"] == 3 and history["tensors"]["bytes"] == 3 * 64 * MIB
    assert holder(census, "__main__.trainer.val_outputs")["tensors"]["bytes"] == MIB
    [batch] = census["frame_locals"]
    assert (batch["name"], batch["function"], batch["line"]) == ("batch", "step", 9)
    assert batch["tensors"]["bytes"] == 8 * MIB
    assert census["totals"]["bytes"] == census["device"]["allocated"]  # every byte of the pretend device is a tensor
    # The loader reads it back into the capture.
    loaded = load_capture(tmp_path / "cap")
    assert loaded.census["roles"]["held"]["bytes"] == 3 * 64 * MIB + MIB and loaded.peak_census is None


def test_at_the_end_of_a_completed_run_the_census_shows_what_is_still_held(tmp_path):
    write(tmp_path, "done.py", (
        "import torch\n"
        "cache = {'features': torch.empty(32 * 2**20, device='cuda')}\n"
        "def work():\n    scratch = torch.empty(2**20, device='cuda')\n"
        "work()\n"))
    run = vramlens("run", "-o", tmp_path / "cap", "done.py", cwd=tmp_path)
    assert run.returncode == 0
    meta = meta_of(tmp_path / "cap")
    assert meta["status"] == "completed" and meta["census"] == "census.json"
    census = census_of(tmp_path / "cap")
    assert census["moment"] == "end" and census["frame_locals"] == []
    assert holder(census, "__main__.cache")["tensors"]["bytes"] == 32 * MIB
    assert census["totals"]["bytes"] == 32 * MIB  # the local of work() is gone


def test_sigusr1_takes_a_census_with_its_snapshot_and_the_run_goes_on(tmp_path):
    flag = tmp_path / "go"
    write(tmp_path, "serve.py", (
        "import os, time, torch\n"
        "def serve():\n"
        "    requests = [torch.empty(4 * 2**20, device='cuda') for _ in range(5)]\n"
        "    print('ready', flush=True)\n"
        f"    while not os.path.exists({str(flag)!r}):\n        time.sleep(0.05)\n"
        "serve()\nprint('finished', flush=True)\n"))
    runner = start_vramlens("run", "-o", tmp_path / "cap", "serve.py", cwd=tmp_path)
    assert runner.stdout.readline().strip() == "ready"
    runner.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 20
    while not (tmp_path / "cap" / "census.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    on_demand = census_of(tmp_path / "cap")
    assert on_demand["moment"] == "on_demand" and meta_of(tmp_path / "cap")["snapshot_moment"] == "on_demand"
    [requests] = on_demand["frame_locals"]
    assert requests["name"] == "requests" and requests["container"] == "list" and requests["length"] == 5
    assert requests["tensors"]["bytes"] == 20 * MIB
    assert "serve" in [frame["name"] for frame in on_demand["main_stack"]]
    flag.write_text("")
    assert runner.stdout.readline().strip() == "finished"
    assert runner.wait(timeout=30) == 0
    assert census_of(tmp_path / "cap")["moment"] == "end"


def test_no_census_writes_none(tmp_path):
    write(tmp_path, "oom.py", "import torch\nkept = [torch.empty(2**20, device='cuda')]\ntorch.empty(2**33, device='cuda')\n")
    run = vramlens("run", "--no-census", "-o", tmp_path / "cap", "oom.py", cwd=tmp_path)
    assert run.returncode == 1
    meta = meta_of(tmp_path / "cap")
    assert meta["version"] == FORMAT_VERSION and meta["census"] is None and meta["peak_census"] is None
    assert meta["recording"]["census"] is False
    assert sorted(os.listdir(tmp_path / "cap")) == ["capture.json", "snapshot.pickle"]
    assert load_capture(tmp_path / "cap").census is None


def test_a_peak_census_is_taken_while_the_run_grows(tmp_path):
    write(tmp_path, "grow.py", (
        "import time, torch\n"
        "kept = []\n"
        "for step in range(9):\n"  # the first peak census comes 5 s into the run at the earliest
        "    kept.append(torch.empty(256 * 2**20, device='cuda'))\n"
        "    time.sleep(0.7)\n"
        "kept.clear()\n"))
    run = vramlens("run", "-o", tmp_path / "cap", "grow.py", cwd=tmp_path)
    assert run.returncode == 0
    meta = meta_of(tmp_path / "cap")
    assert meta["peak_census"] == "census-peak.json"
    peak = census_of(tmp_path / "cap", "census-peak.json")
    assert peak["moment"] == "peak" and peak["thread"] == {"name": "vramlens-live-status", "main": False}
    assert peak["peaks_taken"] >= 1
    assert peak["device"]["allocated"] >= 6 * 256 * MIB
    assert holder(peak, "__main__.kept")["tensors"]["bytes"] == peak["device"]["allocated"]
    assert census_of(tmp_path / "cap")["totals"]["bytes"] == 0  # at the end nothing is left
    assert load_capture(tmp_path / "cap").peak_census["moment"] == "peak"


def test_after_a_crash_the_tracebacks_frames_are_named_through_the_exception(tmp_path):
    write(tmp_path, "crash.py", (
        "import torch\n"
        "def evaluate():\n"
        "    scores = torch.empty(16 * 2**20, device='cuda')\n"
        "    raise ValueError('bad labels')\n"
        "evaluate()\n"))
    run = vramlens("run", "-o", tmp_path / "cap", "crash.py", cwd=tmp_path)
    assert run.returncode == 1
    census = census_of(tmp_path / "cap")
    assert census["moment"] == "end"
    [kept] = [h for h in census["holders"] if h["container"].get("function") == "evaluate"]
    assert kept["names"] == ["scores"] and kept["tensors"]["bytes"] == 16 * MIB
    assert kept["path"].startswith("<the script's exception>.__traceback__") and kept["search"] == "rooted"
