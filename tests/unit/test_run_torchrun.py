"""`vramlens run --torchrun`: the real torchrun (CPU torch) starts the ranks; each rank runs the agent
with the stand-in torch (tests/agent_double/ranks puts it first for processes torchrun starts), so
the launch, the per-rank captures and the endings are checked here without a GPU. The GPU tests run
the same on real GPUs with NCCL (tests/gpu/test_ranks.py)."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from vramlens.runner.torchrun import single_node_options, split_torchrun_command

pytest.importorskip("torch.distributed.run")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RANKS_SITE = os.path.join(ROOT, "tests", "agent_double", "ranks")
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([RANKS_SITE, os.path.join(ROOT, "server")]))
ENV.pop("PYTORCH_CUDA_ALLOC_CONF", None)
UNEVEN = (
    "import ctypes, os, signal, sys, time\n"
    "import torch\n"
    "rank = int(os.environ['RANK'])\n"
    "shard = torch.empty(2**30)  # every rank's share\n"
    "if rank == 1:\n"
    "    time.sleep(0.5)\n"
    "    larger = torch.empty(8 * 2**30)  # the larger batch: more than the pretend 8 GiB device\n"
    "elif '--stuck' in sys.argv:  # blocked in C code, as behind a collective whose peer is gone\n"
    "    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n"
    "    ctypes.CDLL(None).sleep(120)\n"
    "else:\n"
    "    time.sleep(120)  # waits for its peer\n"
)


def vramlens(*args, cwd, env=ENV, timeout=120):
    return subprocess.run([sys.executable, "-m", "vramlens", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def meta_of(folder):
    return json.loads((folder / "capture.json").read_text())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def uneven(tmp_path):
    script = tmp_path / "uneven.py"
    script.write_text(UNEVEN)
    return script


def test_every_rank_writes_its_own_capture_and_the_failing_rank_is_named(tmp_path, uneven):
    run = vramlens("run", "-o", tmp_path / "out", "--torchrun", "--standalone", "--nproc-per-node", "2", uneven,
                   cwd=tmp_path)
    assert run.returncode == 1, run.stderr[-2000:]  # torchrun's own exit code for a failed rank
    rank0, rank1 = meta_of(tmp_path / "out" / "rank-0"), meta_of(tmp_path / "out" / "rank-1")
    assert rank1["status"] == "oom" and rank1["oom"]["requested"] == 8 * 2**30
    assert rank0["status"] == "terminated" and rank0["exit_code"] == 143 and rank0["oom"] is None
    for rank, meta in enumerate((rank0, rank1)):
        facts = meta["distributed"]
        assert (facts["rank"], facts["local_rank"], facts["world_size"], facts["node_rank"]) == (rank, rank, 2, 0)
        assert facts["hostname"] == socket.gethostname() and facts["device_index"] == 0
        assert meta["argv"] == [str(uneven)] and meta["run_id"] == rank1["run_id"]
    assert rank0["pid"] != rank1["pid"]
    report = json.loads(vramlens("analyze", "--json", tmp_path / "out", cwd=tmp_path).stdout)
    assert report["ranks"]["failing_rank"] == 1 and report["outcome"] == "oom"
    followers = [entry for entry in report["ranks"]["per_rank"] if entry["collateral"]]
    assert [entry["rank"] for entry in followers] == [0]
    assert "SIGTERM" in followers[0]["ending_text"] and "no OOM of its own" in followers[0]["ending_text"]


def test_a_rank_stuck_in_c_code_still_writes_its_capture_on_sigterm(tmp_path, uneven):
    started = time.monotonic()
    run = vramlens("run", "-o", tmp_path / "out", "--torchrun", "--standalone", "--nproc-per-node", "2", uneven,
                   "--stuck", cwd=tmp_path)
    assert run.returncode == 1, run.stderr[-2000:]
    # torchrun would kill it after its 30 s grace; the watcher thread writes the capture at once instead.
    assert time.monotonic() - started < 25
    stuck = meta_of(tmp_path / "out" / "rank-0")
    assert stuck["status"] == "terminated" and stuck["stats"]["allocated"] == 2**30


def test_two_launchers_as_two_nodes_write_their_own_ranks_and_merge(tmp_path, uneven):
    port = free_port()
    launchers = [
        subprocess.Popen([sys.executable, "-m", "vramlens", "run", "-o", str(tmp_path / f"node{node}"), "--timeout", "10",
                          "--torchrun", "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "1",
                          "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "two-nodes",
                          str(uneven)], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for node in (0, 1)
    ]
    logs = [launcher.communicate(timeout=120)[0] for launcher in launchers]
    written = sorted(tmp_path.glob("node*/rank-*/capture.json"))
    assert len(written) == 2, logs
    node_ranks = {meta_of(path.parent)["distributed"]["node_rank"] for path in written}
    assert node_ranks == {0, 1}
    report = json.loads(vramlens("analyze", "--json", tmp_path, cwd=tmp_path).stdout)
    per_rank = {entry["rank"]: entry for entry in report["ranks"]["per_rank"]}
    assert sorted(per_rank) == [0, 1] and report["ranks"]["failing_rank"] == 1
    # Its node's torchrun stops it when it loses the rendezvous store the failed node hosted; if its own
    # node hosts the store, nothing tells it and the --timeout ends it.
    assert per_rank[0]["status"] in ("terminated", "timeout") and per_rank[0]["collateral"]


def test_ranks_without_cuda_end_in_one_sentence(tmp_path, uneven):
    env = dict(ENV, PYTHONPATH=os.path.join(ROOT, "server"))  # the real CPU torch in the ranks too
    run = vramlens("run", "-o", tmp_path / "out", "--torchrun", "--nproc-per-node", "2", uneven, cwd=tmp_path, env=env)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1].startswith("vramlens: CUDA is not available in")
    assert not (tmp_path / "out").exists()


def test_torchrun_refusing_its_options_is_said_plainly(tmp_path, uneven):
    run = vramlens("run", "-o", tmp_path / "out", "--torchrun", "--nproc-per-node", "2", "--no-such-option", "1", uneven,
                   cwd=tmp_path)
    assert run.returncode == 2
    assert "torchrun exited with code 2 before any rank wrote a capture" in run.stderr


def test_a_folder_of_something_else_is_never_used_for_ranks(tmp_path, uneven):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    run = vramlens("run", "-o", tmp_path / "out", "--torchrun", "--nproc-per-node", "2", uneven, cwd=tmp_path)
    assert run.returncode == 2 and "not a rank's capture" in run.stderr
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("command, expected", [
    (["--nproc-per-node", "2", "train.py", "--bs", "64"], (["--nproc-per-node", "2"], "train.py", ["--bs", "64"])),
    (["--standalone", "--nproc_per_node=2", "train.py"], (["--standalone", "--nproc_per_node=2"], "train.py", [])),
    (["--nnodes", "2", "--", "train.py", "--", "x"], (["--nnodes", "2"], "train.py", ["--", "x"])),
    (["train.py"], ([], "train.py", [])),
])
def test_torchrun_options_are_told_from_the_script(command, expected):
    options, script, args = split_torchrun_command(command)
    assert (options, str(script), args) == expected


@pytest.mark.parametrize("command, message", [
    (["--nproc-per-node", "2"], "give the script"),
    (["--no-python", "train.py"], "--no-python is not supported"),
    (["-m", "pkg.train"], "-m is not supported"),
])
def test_torchrun_commands_we_cannot_wrap_are_refused(command, message):
    with pytest.raises(ValueError, match=message):
        split_torchrun_command(command)


def test_torchrun_must_come_last(tmp_path, uneven):
    run = vramlens("run", str(uneven), "--torchrun", "--nproc-per-node", "2", cwd=tmp_path)
    assert run.returncode == 2


def test_the_editors_processes_per_node_setting_becomes_a_standalone_launch():
    assert single_node_options(4) == ["--standalone", "--nproc-per-node", "4"]
    with pytest.raises(ValueError):
        single_node_options(0)
