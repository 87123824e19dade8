"""`vramlens run` when the run goes wrong around the script: a limit no device has, os._exit, a script
or child that ignores SIGTERM under --timeout, and the runner itself killed with SIGKILL.

The script runs through the real runner and agent; torch is the stand-in of tests/agent_double
(a pretend CUDA device), as in tests/unit/test_run_process.py.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from process_helpers import running

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests", "agent_double"), os.path.join(ROOT, "server")]))
ENV.pop("PYTORCH_CUDA_ALLOC_CONF", None)


def vramlens(*args, cwd, timeout=60):
    return subprocess.run([sys.executable, "-m", "vramlens", *map(str, args)], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def meta_of(capture):
    return json.loads((capture / "capture.json").read_text())


def wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.parametrize("limit", ["1e400GiB", "1e400", "nan", "2e18GiB"])
def test_a_memory_limit_no_number_can_hold_is_one_sentence(tmp_path, limit):
    (tmp_path / "ok.py").write_text("print('ran')\n")
    run = vramlens("run", "--memory-limit", limit, "-o", tmp_path / "cap", "ok.py", cwd=tmp_path)
    assert run.returncode == 2 and "ran" not in run.stdout
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert run.stderr.startswith("vramlens: --memory-limit ")


def test_os_exit_gives_the_scripts_exit_code_and_says_nothing_was_recorded(tmp_path):
    (tmp_path / "quit.py").write_text("import os, torch\nx = torch.empty(2**20, device='cuda')\nos._exit(3)\n")
    run = vramlens("run", "-o", tmp_path / "cap", "quit.py", cwd=tmp_path)
    assert run.returncode == 3  # what `python quit.py` gives
    assert "exited with code 3 before a capture could be written (os._exit" in run.stderr
    assert "Traceback" not in run.stderr


def test_timeout_on_a_script_that_ignores_sigterm_keeps_the_capture_quickly(tmp_path):
    (tmp_path / "stubborn.py").write_text(
        "import signal, time, torch\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "kept = torch.empty(64 * 2**20, device='cuda')\nwhile True:\n    time.sleep(0.05)\n")
    started = time.monotonic()
    run = vramlens("run", "--timeout", "2", "-o", tmp_path / "cap", "stubborn.py", cwd=tmp_path)
    elapsed = time.monotonic() - started
    assert run.returncode == 124
    assert elapsed < 15, f"took {elapsed:.1f} s"  # was 32 s, and the capture lost
    meta = meta_of(tmp_path / "cap")
    assert meta["status"] == "timeout" and meta["snapshot"] == "snapshot.pickle"
    assert meta["stats"]["allocated"] == 64 * 2**20


def test_timeout_ends_a_child_that_ignores_sigterm(tmp_path):
    pid_file = tmp_path / "child.pid"
    (tmp_path / "parent.py").write_text(
        "import subprocess, sys, time, torch\nx = torch.empty(2**20, device='cuda')\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "while True:\n    time.sleep(0.05)\n")
    run = vramlens("run", "--timeout", "2", "-o", tmp_path / "cap", "parent.py", cwd=tmp_path)
    assert run.returncode == 124 and meta_of(tmp_path / "cap")["status"] == "timeout"
    child = int(pid_file.read_text())
    assert wait_for(lambda: not running(child), 5), "the child that ignores SIGTERM survived --timeout"


def test_a_runner_killed_with_sigkill_ends_the_script_tree_and_keeps_the_capture(tmp_path):
    pid_file = tmp_path / "pids"
    (tmp_path / "forever.py").write_text(
        "import os, subprocess, sys, time, torch\nx = torch.empty(8 * 2**20, device='cuda')\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pid_file)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "while True:\n    time.sleep(0.05)\n")
    runner = subprocess.Popen([sys.executable, "-m", "vramlens", "run", "--timeout", "120", "-o", str(tmp_path / "cap"),
                               "forever.py"], cwd=tmp_path, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: pid_file.exists() and " " in pid_file.read_text(), 30)
        script, child = map(int, pid_file.read_text().split())
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)
        assert wait_for(lambda: not running(script) and not running(child), 15), "the script outlived its runner"
    finally:
        if runner.poll() is None:
            runner.kill()
    meta = meta_of(tmp_path / "cap")
    assert meta["status"] == "terminated" and meta["snapshot"] == "snapshot.pickle"
    assert any("ended before the script did" in note for note in meta["notes"])


def test_ranks_under_torchrun_notice_their_runner_is_gone(tmp_path):
    """torchrun passes no descriptor on: each rank's agent watches the runner's process instead."""
    pytest.importorskip("torch.distributed.run")
    ranks_site = os.path.join(ROOT, "tests", "agent_double", "ranks")
    env = dict(ENV, PYTHONPATH=os.pathsep.join([ranks_site, os.path.join(ROOT, "server")]))
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    (tmp_path / "wait.py").write_text(
        "import os, time, torch\nx = torch.empty(2**20, device='cuda')\n"
        f"open(os.path.join({str(pid_dir)!r}, os.environ['RANK']), 'w').write(str(os.getpid()))\n"
        "while True:\n    time.sleep(0.05)\n")
    runner = subprocess.Popen([sys.executable, "-m", "vramlens", "run", "-o", str(tmp_path / "job"), "--torchrun",
                               "--standalone", "--nproc-per-node", "2", "wait.py"], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: len(list(pid_dir.iterdir())) == 2, 90), "the ranks did not start"
        ranks = [int(path.read_text()) for path in pid_dir.iterdir()]
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)
        assert wait_for(lambda: not any(running(pid) for pid in ranks), 30), "a rank outlived its runner"
    finally:
        if runner.poll() is None:
            runner.kill()
    for rank in (0, 1):
        meta = meta_of(tmp_path / "job" / f"rank-{rank}")
        assert meta["status"] == "terminated" and any("ended before the script did" in note for note in meta["notes"])
