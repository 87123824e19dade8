"""`vramlens run --torchrun` on real GPUs: a DDP job whose last rank gets a larger batch and runs out.

With two GPUs the ranks use NCCL, one GPU each; with one GPU both ranks share it over gloo (NCCL
refuses two ranks on one device), so the NCCL-specific check runs only with two.
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCENARIO = os.path.join(ROOT, "scenarios", "ddp_uneven.py")
# NVLink multicast stays off: on a shared host it can take the GPUs out of service.
SAFE_NCCL = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
CAP = ["--memory-limit", "2560MiB", "--max-entries", "20000"]


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count()


def backend_args() -> list[str]:
    return [] if gpu_count() >= 2 else ["--backend", "gloo"]


def culprit_lines() -> set[int]:
    with open(SCENARIO) as source:
        return {number for number, text in enumerate(source, 1) if "# vramlens: culprit" in text}


def vramlens_env(**extra) -> dict:
    return dict(os.environ, PYTHONPATH=os.path.join(ROOT, "server"), **SAFE_NCCL, **extra)


def analyze(folder) -> dict:
    done = subprocess.run([sys.executable, "-m", "vramlens", "analyze", "--json", str(folder)], cwd=ROOT,
                          env=vramlens_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def check_uneven_job(report: dict) -> dict[int, dict]:
    ranks = report["ranks"]
    per_rank = {entry["rank"]: entry for entry in ranks["per_rank"]}
    assert ranks["world_size"] == 2 and sorted(per_rank) == [0, 1] and ranks["missing_ranks"] == []
    assert ranks["failing_rank"] == 1 and ranks["shown_rank"] == 1
    assert per_rank[1]["ending"] == "oom" and not per_rank[1]["collateral"]
    assert per_rank[0]["ending"] in ("stopped", "collective_error") and per_rank[0]["collateral"]
    assert "no OOM of its own" in per_rank[0]["ending_text"]
    assert report["outcome"] == "oom" and report["cause"] == "working_set"  # the top level is rank 1's analysis
    peak = ranks["imbalance"]["peak_allocated"]
    assert peak["max_rank"] == 1 and peak["ratio"] > 1.5
    top = ranks["lines"][0]
    assert top["high_rank"] == 1 and top["line"] in culprit_lines()
    return per_rank


def test_one_node_two_ranks(tmp_path):
    out = tmp_path / "ddp"
    run = subprocess.run([sys.executable, "-m", "vramlens", "run", "-o", str(out), *CAP, "--timeout", "150",
                          "--torchrun", "--standalone", "--nproc-per-node", "2", SCENARIO, *backend_args()],
                         cwd=ROOT, env=vramlens_env(), capture_output=True, text=True, timeout=300)
    assert run.returncode not in (0, 2), run.stderr[-3000:]
    assert sorted(path.name for path in out.iterdir()) == ["rank-0", "rank-1"]
    per_rank = check_uneven_job(analyze(out))
    assert {per_rank[0]["pid"], per_rank[1]["pid"]} and per_rank[0]["pid"] != per_rank[1]["pid"]
    if gpu_count() >= 2:
        assert {per_rank[0]["device_index"], per_rank[1]["device_index"]} == {0, 1}
        # NCCL's buffers, the CUDA context and libraries live outside PyTorch's allocator.
        assert all(per_rank[rank]["outside_pytorch"] > 256 * 2**20 for rank in (0, 1))


def test_two_nodes_simulated_on_one_machine(tmp_path):
    launchers = []
    for node in (0, 1):
        device = str(node % gpu_count())
        command = [sys.executable, "-m", "vramlens", "run", "-o", str(tmp_path / f"node{node}"), *CAP, "--timeout", "40",
                   "--torchrun", "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "1",
                   "--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:29541", "--rdzv-id", "vramlens-gpu-test",
                   SCENARIO, *backend_args()]
        launchers.append(subprocess.Popen(command, cwd=ROOT, env=vramlens_env(CUDA_VISIBLE_DEVICES=device),
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    logs = [launcher.communicate(timeout=240)[0] for launcher in launchers]
    written = sorted(path.parent.name + "/" + path.name for path in tmp_path.glob("node*/rank-*"))
    assert len(written) == 2, logs
    assert {name.split("/")[0] for name in written} == {"node0", "node1"}  # each node wrote its own rank
    report = analyze(tmp_path)
    per_rank = check_uneven_job(report)
    assert {per_rank[0]["node_rank"], per_rank[1]["node_rank"]} == {0, 1}
