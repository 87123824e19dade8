"""On a real GPU: histories recorded by torch itself with `skip_actions` (torch 2.11), and runs that
end around the script (a script ignoring SIGTERM under --timeout, the runner killed), read as
tests/hostile reads their stand-in versions."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]

RECORD = """
import sys, torch
skip = [action for action in sys.argv[2].split(",") if action]
torch.cuda.memory._record_memory_history(max_entries=100000, skip_actions=skip)
kept = []
for step in range(40):
    x = torch.empty(8 * 2**20, device="cuda")        # freed each step
    kept.append(torch.empty(2**20, device="cuda"))   # kept: the slow leak
    y = x * 2
    del x, y
torch.cuda.synchronize()
torch.cuda.memory._dump_snapshot(sys.argv[1])
"""


def record(tmp_path: Path, skip: str) -> Path:
    path = tmp_path / f"skip-{skip or 'none'}.pickle"
    script = tmp_path / "record.py"
    script.write_text(RECORD)
    subprocess.run([sys.executable, str(script), str(path), skip], check=True, timeout=300)
    return path


def test_a_history_without_free_requested_reads_as_the_full_one(vramlens, tmp_path):
    full = json.loads(vramlens("analyze", "--json", record(tmp_path, ""), "--total-memory", "141e9").stdout)
    run = vramlens("analyze", "--json", record(tmp_path, "free_requested"), "--total-memory", "141e9")
    assert run.returncode == 0, run.stderr
    skipped = json.loads(run.stdout)
    assert any("without free_requested events (skip_actions)" in note for note in skipped["notes"])
    assert skipped["memory"]["end_allocated"] == full["memory"]["end_allocated"]
    assert skipped["memory"]["peak_allocated"] <= full["memory"]["peak_allocated"] * 1.05


def test_a_history_without_any_free_is_refused(vramlens, tmp_path):
    run = vramlens("analyze", record(tmp_path, "free_requested,free_completed"), "--total-memory", "141e9")
    assert run.returncode == 2 and "recorded without frees (skip_actions)" in run.stderr


def test_timeout_on_a_script_that_ignores_sigterm_keeps_the_capture(vramlens, tmp_path):
    (tmp_path / "stubborn.py").write_text(
        "import signal, time, torch\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "kept = torch.empty(64 * 2**20, device='cuda')\nwhile True:\n    time.sleep(0.05)\n")
    started = time.monotonic()
    run = vramlens("run", "--timeout", "3", "-o", tmp_path / "cap", tmp_path / "stubborn.py", cwd=tmp_path)
    assert run.returncode == 124 and time.monotonic() - started < 30
    meta = json.loads((tmp_path / "cap" / "capture.json").read_text())
    assert meta["status"] == "timeout" and meta["snapshot"] == "snapshot.pickle"


def test_a_killed_runner_ends_the_script_and_keeps_the_capture(tmp_path):
    pid_file = tmp_path / "pid"
    (tmp_path / "forever.py").write_text(
        "import os, time, torch\nx = torch.empty(64 * 2**20, device='cuda')\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\nwhile True:\n    time.sleep(0.05)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "server"))
    runner = subprocess.Popen([sys.executable, "-m", "vramlens", "run", "-o", str(tmp_path / "cap"), "forever.py"],
                              cwd=tmp_path, env=env)
    deadline = time.monotonic() + 120
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    script = int(pid_file.read_text())
    runner.send_signal(signal.SIGKILL)
    runner.wait(timeout=10)
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{script}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{script}")
    meta = json.loads((tmp_path / "cap" / "capture.json").read_text())
    assert meta["status"] == "terminated" and meta["snapshot"] == "snapshot.pickle"
