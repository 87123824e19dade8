"""How `vramlens run` starts, watches, signals, times out and records a script.

The script runs in a real interpreter through the real agent and runner; only torch is the
stand-in from tests/agent_double (a pretend CUDA device), since this machine has no GPU. The
same behaviours are checked against the real torch on a GPU by tests/gpu/.
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
DOUBLE = os.path.join(ROOT, "tests", "agent_double")
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([DOUBLE, os.path.join(ROOT, "server")]))
ENV.pop("PYTORCH_CUDA_ALLOC_CONF", None)


def vramlens(*args, cwd, timeout=60):
    return subprocess.run([sys.executable, "-m", "vramlens", *map(str, args)], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def start_vramlens(*args, cwd):
    return subprocess.Popen([sys.executable, "-m", "vramlens", *map(str, args)], cwd=cwd, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def direct(script, *args, cwd):
    return subprocess.run([sys.executable, str(script), *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=60)


def meta_of(capture):
    with open(os.path.join(capture, "capture.json")) as meta:
        return json.load(meta)


def script_stderr(stderr):
    return "".join(line for line in stderr.splitlines(True) if not line.startswith("vramlens: "))


def write(folder, name, text):
    path = folder / name
    path.write_text(text)
    return path


def test_argv_main_cwd_and_exit_code_match_a_direct_run(tmp_path):
    write(tmp_path, "probe.py", (
        "import json, os, sys\n"
        "print(json.dumps({'argv': sys.argv, 'name': __name__, 'cwd': os.getcwd(), 'path0': sys.path[0],\n"
        "                  'file': __file__, 'main': sys.modules['__main__'].__file__}))\n"
        "sys.exit(3)\n"))
    plain = direct("probe.py", "a", "--b", cwd=tmp_path)
    run = vramlens("run", "-o", tmp_path / "cap", "probe.py", "a", "--b", cwd=tmp_path)
    assert run.returncode == plain.returncode == 3
    assert json.loads(run.stdout) == json.loads(plain.stdout)
    assert meta_of(tmp_path / "cap")["status"] == "exit"


def test_tracebacks_are_what_python_prints_chains_included(tmp_path):
    write(tmp_path, "crash.py", (
        "def load():\n    return {}['weights']\n"
        "def main():\n    try:\n        load()\n    except KeyError as error:\n"
        "        raise ValueError('checkpoint is incomplete') from error\n"
        "main()\n"))
    plain = direct("crash.py", cwd=tmp_path)
    run = vramlens("run", "-o", tmp_path / "cap", "crash.py", cwd=tmp_path)
    assert run.returncode == plain.returncode == 1
    assert script_stderr(run.stderr) == plain.stderr
    exception = meta_of(tmp_path / "cap")["exception"]
    assert exception["type"] == "ValueError" and exception["message"] == "checkpoint is incomplete"
    assert exception["traceback"] == plain.stderr
    assert [frame["line"] for frame in exception["frames"]] == [8, 7]


def test_syntax_error_reads_like_python(tmp_path):
    write(tmp_path, "broken.py", "x = 1\ndef f(:\n    pass\n")
    plain = direct("broken.py", cwd=tmp_path)
    run = vramlens("run", "-o", tmp_path / "cap", "broken.py", cwd=tmp_path)
    assert run.returncode == plain.returncode == 1
    assert script_stderr(run.stderr) == plain.stderr
    assert meta_of(tmp_path / "cap")["exception"]["type"] == "SyntaxError"


def test_sys_exit_with_a_message(tmp_path):
    write(tmp_path, "quit.py", "import sys\nsys.exit('no data found')\n")
    run = vramlens("run", "-o", tmp_path / "cap", "quit.py", cwd=tmp_path)
    assert run.returncode == 1 and "no data found" in run.stderr
    assert meta_of(tmp_path / "cap")["status"] == "exit"


def test_oom_is_recorded_with_the_cap_and_the_latest_of_several(tmp_path):
    write(tmp_path, "oom.py", (
        "import torch\n"
        "kept = torch.empty(1 * 2**30, device='cuda')\n"
        "try:\n    torch.empty(2 * 2**30, device='cuda')\nexcept torch.cuda.OutOfMemoryError:\n    pass\n"
        "big = torch.empty(3 * 2**30, device='cuda')\n"))
    run = vramlens("run", "--memory-limit", "2GiB", "-o", tmp_path / "cap", "oom.py", cwd=tmp_path)
    assert run.returncode == 1
    meta = meta_of(tmp_path / "cap")
    assert meta["status"] == "oom" and meta["snapshot_moment"] == "oom"
    assert meta["memory_limit"] == {"requested": "2GiB", "fraction": 0.25, "bytes": 2 * 2**30}
    assert meta["oom"]["count"] == 2 and meta["oom"]["requested"] == 3 * 2**30  # the last one
    assert any("2 OOMs" in note for note in meta["notes"])


def test_allocator_settings_the_script_sets_before_cuda_take_effect(tmp_path):
    write(tmp_path, "conf.py", (
        "import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'\n"
        "import torch\nx = torch.empty(1024, device='cuda')\n"
        "import torch.cuda as c\nprint(c._state['alloc_conf'])\n"))
    run = vramlens("run", "-o", tmp_path / "cap", "conf.py", cwd=tmp_path)
    assert run.returncode == 0
    assert run.stdout.strip() == "expandable_segments:True"  # the allocator saw it at initialisation
    assert meta_of(tmp_path / "cap")["environment"]["alloc_env"] == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}


def test_script_that_never_uses_cuda_still_gets_a_capture(tmp_path):
    write(tmp_path, "cpu.py", "print(sum(range(10)))\n")
    run = vramlens("run", "-o", tmp_path / "cap", "cpu.py", cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "45"
    meta = meta_of(tmp_path / "cap")
    assert meta["snapshot"] is None and any("never initialised CUDA" in note for note in meta["notes"])


def test_a_broken_exception_does_not_cost_the_capture(tmp_path):
    write(tmp_path, "odd.py", (
        "import torch\nx = torch.empty(1024, device='cuda')\n"
        "class Odd(Exception):\n    def __str__(self):\n        raise RuntimeError('no text')\n"
        "raise Odd()\n"))
    run = vramlens("run", "-o", tmp_path / "cap", "odd.py", cwd=tmp_path)
    assert run.returncode == 1
    meta = meta_of(tmp_path / "cap")
    assert meta["status"] == "error" and meta["exception"]["type"].endswith("Odd")
    assert "str() failed" in meta["exception"]["message"]


def test_timeout_ends_the_process_tree_and_keeps_the_capture(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    write(tmp_path, "hang.py", (
        "import subprocess, sys, time, torch\n"
        "kept = torch.empty(256 * 2**20, device='cuda')\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "while True:\n    time.sleep(0.05)\n"))
    started = time.monotonic()
    run = vramlens("run", "--timeout", "3", "-o", tmp_path / "cap", "hang.py", cwd=tmp_path)
    assert run.returncode == 124
    assert time.monotonic() - started < 30
    meta = meta_of(tmp_path / "cap")
    assert meta["status"] == "timeout" and meta["snapshot"] == "snapshot.pickle"
    assert meta["stats"]["allocated"] == 256 * 2**20
    time.sleep(0.3)
    assert not running(int(pid_file.read_text()))


@pytest.mark.parametrize("signum, exit_code, status", [
    (signal.SIGINT, 130, "interrupted"),
    (signal.SIGTERM, 143, "terminated"),
    (signal.SIGHUP, 143, "terminated"),
])
def test_signals_to_vramlens_reach_the_script_and_keep_the_capture(tmp_path, signum, exit_code, status):
    write(tmp_path, "loop.py", (
        "import os, time, torch\nkept = torch.empty(32 * 2**20, device='cuda')\n"
        "print(os.getpid(), flush=True)\nwhile True:\n    time.sleep(0.05)\n"))
    runner = start_vramlens("run", "-o", tmp_path / "cap", "loop.py", cwd=tmp_path)
    script_pid = int(runner.stdout.readline())
    runner.send_signal(signum)
    assert runner.wait(timeout=30) == exit_code
    meta = meta_of(tmp_path / "cap")
    assert meta["status"] == status and meta["stats"]["allocated"] == 32 * 2**20
    time.sleep(0.3)
    assert not running(script_pid)


def test_sigusr1_writes_a_capture_and_the_run_goes_on(tmp_path):
    flag = tmp_path / "go"
    write(tmp_path, "server.py", (
        "import os, time, torch\nkept = torch.empty(64 * 2**20, device='cuda')\n"
        "print('ready', flush=True)\n"
        f"while not os.path.exists({str(flag)!r}):\n    time.sleep(0.05)\n"
        "print('finished', flush=True)\n"))
    runner = start_vramlens("run", "-o", tmp_path / "cap", "server.py", cwd=tmp_path)
    assert runner.stdout.readline().strip() == "ready"
    runner.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 20
    while not (tmp_path / "cap" / "capture.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    on_demand = meta_of(tmp_path / "cap")
    assert on_demand["status"] == "on_demand" and on_demand["snapshot_moment"] == "on_demand"
    assert runner.poll() is None
    flag.write_text("")
    assert runner.stdout.readline().strip() == "finished"
    assert runner.wait(timeout=30) == 0
    assert meta_of(tmp_path / "cap")["status"] == "completed"


def test_a_folder_that_is_not_a_capture_is_never_replaced(tmp_path):
    write(tmp_path, "ok.py", "print('ok')\n")
    precious = tmp_path / "results"
    precious.mkdir()
    (precious / "important.txt").write_text("keep me")
    run = vramlens("run", "-o", precious, "ok.py", cwd=tmp_path)
    assert run.returncode == 2 and "already exists and is not a capture" in run.stderr
    assert (precious / "important.txt").read_text() == "keep me"
    assert vramlens("run", "-o", tmp_path / "cap", "ok.py", cwd=tmp_path).returncode == 0
    assert vramlens("run", "-o", tmp_path / "cap", "ok.py", cwd=tmp_path).returncode == 0  # a capture is replaced


def test_an_older_capture_is_never_passed_off_as_this_run(tmp_path):
    write(tmp_path, "ok.py", "print('ok')\n")
    assert vramlens("run", "-o", tmp_path / "cap", "ok.py", cwd=tmp_path).returncode == 0
    write(tmp_path, "killed.py", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    run = vramlens("run", "-o", tmp_path / "cap", "killed.py", cwd=tmp_path)
    assert run.returncode == 128 + 9  # as the shell reports a process killed by SIGKILL
    assert "before a capture could be written" in run.stderr
    assert meta_of(tmp_path / "cap")["script"].endswith("ok.py")  # the older one, untouched


@pytest.mark.parametrize("value, message", [
    ("24", "ambiguous"), ("0", "more than zero"), ("-1GiB", "not a size"), ("lots", "not a size"),
])
def test_memory_limit_must_be_unambiguous(tmp_path, value, message):
    write(tmp_path, "ok.py", "print('ok')\n")
    run = vramlens("run", f"--memory-limit={value}", "ok.py", cwd=tmp_path)
    assert run.returncode == 2 and message in run.stderr


def test_a_cap_larger_than_the_gpu_is_not_applied_and_says_so(tmp_path):
    write(tmp_path, "ok.py", "import torch\nx = torch.empty(1024, device='cuda')\n")
    run = vramlens("run", "--memory-limit", "64GiB", "-o", tmp_path / "cap", "ok.py", cwd=tmp_path)
    assert run.returncode == 0
    assert "more than this GPU's 8.00 GiB, so no cap was applied" in run.stderr
    assert meta_of(tmp_path / "cap")["memory_limit"] is None


def test_no_cuda_in_the_interpreter_writes_nothing(tmp_path):
    write(tmp_path, "ok.py", "print('ok')\n")
    env = dict(ENV, DOUBLE_NO_CUDA="1")
    run = subprocess.run([sys.executable, "-m", "vramlens", "run", "-o", str(tmp_path / "cap"), "ok.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "CUDA is not available" in run.stderr
    assert not (tmp_path / "cap").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.py"]


def test_the_scripts_own_double_dash_and_options_reach_it_unchanged(tmp_path):
    write(tmp_path, "args.py", "import sys\nprint(sys.argv[1:])\n")
    plain = direct("args.py", "--timeout", "3", "--", "z", cwd=tmp_path)
    run = vramlens("run", "-o", tmp_path / "cap", "--", "args.py", "--timeout", "3", "--", "z", cwd=tmp_path)
    assert run.returncode == 0 and run.stdout == plain.stdout == "['--timeout', '3', '--', 'z']\n"
    missing = vramlens("run", cwd=tmp_path)
    assert missing.returncode == 2 and "give the script to run" in missing.stderr
