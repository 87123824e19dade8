"""`vramlens run` end to end on a real GPU: every outcome, and every way a script can end."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from process_helpers import running

pytestmark = pytest.mark.gpu
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCENARIOS = os.path.join(ROOT, "scenarios")


def culprit_lines(script):
    with open(script) as source:
        return {number for number, text in enumerate(source, 1) if "# vramlens: culprit" in text}


def load_meta(capture):
    with open(os.path.join(capture, "capture.json")) as meta:
        return json.load(meta)


@pytest.mark.parametrize(
    "name, options, exit_code, cause",
    [
        ("working_set", ["--memory-limit", "5GiB"], 1, "working_set"),
        ("retained_references", ["--memory-limit", "3GiB"], 1, "retained_references"),
        ("fragmentation", ["--memory-limit", "1600MiB"], 1, "fragmentation"),
        ("outside_allocator", [], 1, "outside_allocator"),
        ("cached_not_leak", [], 0, "cached_not_leak"),
        ("no_problem", [], 0, "no_problem"),
    ],
)
def test_each_outcome_is_recorded_and_diagnosed(vramlens, tmp_path, name, options, exit_code, cause):
    script = os.path.join(SCENARIOS, f"{name}.py")
    run = vramlens("run", "-o", tmp_path / "cap", *options, script)
    assert run.returncode == exit_code, run.stderr
    meta = load_meta(tmp_path / "cap")
    assert meta["status"] == ("oom" if exit_code else "completed")
    assert meta["environment"]["gpu_name"] and meta["environment"]["total_memory"] > 0
    if exit_code:
        assert meta["oom"]["requested"] > 0 and "OutOfMemoryError" in meta["exception"]["type"]
    analysis = vramlens("analyze", "--json", tmp_path / "cap")
    assert analysis.returncode == 0, analysis.stderr
    report = json.loads(analysis.stdout)
    print(name, report["cause"], report["confidence"], report["lines"][:2])
    assert report["cause"] == cause
    if culprit_lines(script):  # a healthy run has no culprit to name
        top_user_line = next(line for line in report["lines"] if line["path"])
        assert top_user_line["line"] in culprit_lines(script)


def test_argv_main_cwd_and_exit_code_are_the_scripts(vramlens, tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(
        "import os, sys, json\n"
        "print(json.dumps({'argv': sys.argv, 'name': __name__, 'cwd': os.getcwd(), 'path0': sys.path[0]}))\n"
        "sys.exit(3)\n"
    )
    direct = subprocess.run([sys.executable, str(script), "a", "--b"], cwd=tmp_path, capture_output=True, text=True)
    run = vramlens("run", "-o", tmp_path / "cap", str(script), "a", "--b", cwd=tmp_path)
    assert run.returncode == direct.returncode == 3
    assert json.loads(run.stdout) == json.loads(direct.stdout)
    assert load_meta(tmp_path / "cap")["status"] == "exit"


def test_script_that_raises_keeps_exception_and_traceback(vramlens, tmp_path):
    script = tmp_path / "crash.py"
    script.write_text("import torch\nx = torch.ones(1024, device='cuda')\ndef f():\n    raise ValueError('bad batch')\nf()\n")
    run = vramlens("run", "-o", tmp_path / "cap", script, cwd=tmp_path)
    assert run.returncode == 1
    assert "ValueError: bad batch" in run.stderr and "launch.py" not in run.stderr
    meta = load_meta(tmp_path / "cap")
    assert meta["status"] == "error" and meta["exception"]["type"] == "ValueError"
    assert [f["line"] for f in meta["exception"]["frames"]] == [5, 4]


def test_syntax_error_is_reported_like_python(vramlens, tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("def f(:\n    pass\n")
    run = vramlens("run", "-o", tmp_path / "cap", script, cwd=tmp_path)
    assert run.returncode == 1
    assert "SyntaxError" in run.stderr
    assert load_meta(tmp_path / "cap")["exception"]["type"] == "SyntaxError"


def test_hang_is_ended_by_timeout_with_its_process_tree(vramlens, tmp_path):
    script = tmp_path / "hang.py"
    pid_file = tmp_path / "grandchild.pid"
    script.write_text(
        "import subprocess, sys, time, torch\n"
        "kept = torch.empty(256 * 2**20, dtype=torch.uint8, device='cuda')\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "while True:\n    time.sleep(0.1)\n"
    )
    started = time.monotonic()
    run = vramlens("run", "--timeout", "8", "-o", tmp_path / "cap", script, cwd=tmp_path)
    assert run.returncode == 124
    assert time.monotonic() - started < 60
    meta = load_meta(tmp_path / "cap")
    assert meta["status"] == "timeout" and meta["snapshot"] == "snapshot.pickle"
    assert meta["stats"]["allocated"] >= 256 * 2**20
    grandchild = int(pid_file.read_text())
    time.sleep(0.5)
    assert not running(grandchild)


def test_on_demand_signal_writes_a_capture_without_stopping(vramlens, tmp_path):
    script = tmp_path / "server.py"
    script.write_text(
        "import os, time, torch\n"
        "kept = torch.empty(64 * 2**20, dtype=torch.uint8, device='cuda')\n"
        "print(os.getpid(), flush=True)\n"
        "time.sleep(6)\n"
        "print('finished', flush=True)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "server"))
    runner = subprocess.Popen([sys.executable, "-m", "vramlens", "run", "-o", str(tmp_path / "cap"), str(script)],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
    agent_pid = int(runner.stdout.readline())
    os.kill(agent_pid, signal.SIGUSR1)
    deadline = time.monotonic() + 20
    while not (tmp_path / "cap" / "capture.json").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert load_meta(tmp_path / "cap")["status"] == "on_demand"
    assert runner.poll() is None  # still running
    assert "finished" in runner.stdout.read()
    assert runner.wait(timeout=60) == 0
    assert load_meta(tmp_path / "cap")["status"] == "completed"


def test_ctrl_c_keeps_the_capture(vramlens, tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(
        "import time, torch\n"
        "kept = torch.empty(32 * 2**20, dtype=torch.uint8, device='cuda')\n"
        "print('ready', flush=True)\n"
        "while True:\n    time.sleep(0.05)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "server"))
    runner = subprocess.Popen([sys.executable, "-m", "vramlens", "run", "-o", str(tmp_path / "cap"), str(script)],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert runner.stdout.readline().strip() == "ready"
    runner.send_signal(signal.SIGINT)
    assert runner.wait(timeout=60) == 130
    meta = load_meta(tmp_path / "cap")
    assert meta["status"] == "interrupted" and meta["exception"]["type"] == "KeyboardInterrupt"


def test_memory_limit_is_applied_and_recorded(vramlens, tmp_path):
    script = tmp_path / "fits.py"
    script.write_text("import torch\nx = torch.empty(3 * 2**30, dtype=torch.uint8, device='cuda')\n")
    run = vramlens("run", "--memory-limit", "2GiB", "-o", tmp_path / "cap", script, cwd=tmp_path)
    assert run.returncode == 1  # 3 GiB cannot fit under a 2 GiB cap
    meta = load_meta(tmp_path / "cap")
    assert meta["memory_limit"]["requested"] == "2GiB"
    assert abs(meta["memory_limit"]["bytes"] - 2 * 2**30) < 2**20
    assert abs(meta["oom"]["device_limit"] - meta["memory_limit"]["bytes"]) < 0.01 * meta["memory_limit"]["bytes"]


def test_nvml_samples_by_pid(vramlens, tmp_path):
    run = vramlens("run", "-o", tmp_path / "cap", os.path.join(SCENARIOS, "no_problem.py"))
    assert run.returncode == 0
    nvml = load_meta(tmp_path / "cap")["nvml"]
    assert nvml["available"] is True
    phases = {sample["phase"] for sample in nvml["samples"]}
    assert {"start", "exit"} <= phases
    ours = [s for s in nvml["samples"] if s["process_used"]]
    assert ours and all(s["device_used"] >= s["process_used"] for s in ours)


def test_allocator_setting_is_tried_as_a_measured_experiment(vramlens, tmp_path):
    script = os.path.join(SCENARIOS, "fragmentation.py")
    run = vramlens("run", "-o", tmp_path / "cap", "--memory-limit", "1600MiB",
                   "--try-alloc-conf", "expandable_segments:True", script)
    assert run.returncode == 1, run.stderr  # the baseline's exit code
    meta = load_meta(tmp_path / "cap")
    [trial] = meta["interventions"]
    assert trial["setting"] == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    assert trial["baseline"]["oom"] is True
    trial_meta = load_meta(tmp_path / trial["capture"])
    assert "expandable_segments:True" in trial_meta["environment"]["alloc_env"]["PYTORCH_CUDA_ALLOC_CONF"]
    assert trial["result"]["oom"] == (trial_meta["oom"] is not None)
    assert trial["verdict"] in {"prevented the OOM", "did not prevent the OOM"}


def test_timeout_with_forked_data_loader_workers(vramlens, tmp_path):
    script = tmp_path / "loader.py"
    script.write_text(
        "import time, torch\n"
        "from torch.utils.data import DataLoader, Dataset\n"
        "class Slow(Dataset):\n"
        "    def __len__(self): return 10**6\n"
        "    def __getitem__(self, i):\n"
        "        time.sleep(0.05)\n"
        "        return torch.zeros(4)\n"
        "kept = torch.empty(128 * 2**20, dtype=torch.uint8, device='cuda')\n"
        "for batch in DataLoader(Slow(), batch_size=2, num_workers=2):\n"
        "    pass\n"
    )
    run = vramlens("run", "--timeout", "10", "-o", tmp_path / "cap", script, cwd=tmp_path)
    assert run.returncode == 124
    meta = load_meta(tmp_path / "cap")
    assert meta["status"] == "timeout"
    assert meta["stats"]["allocated"] >= 128 * 2**20  # written by the agent, not by a worker
