"""Comparing ranks on real captures of torchrun launches (tests/fixtures/ranks, see its README):
merging folders written by several launchers, the failing rank, the rank that only followed,
per-rank peaks and memory outside PyTorch, the imbalance and the lines that differ most."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vramlens.analysis import analyze_path, to_json
from vramlens.analysis.rendering.rank_export import comparison_to_json
from vramlens.analysis.ranks.analyze import analyze_ranks
from vramlens.capture import CaptureError

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "ranks"
RANKS = FIXTURES / "one_gpu_gloo"
NCCL = FIXTURES / "two_gpu_nccl"
SCENARIO = REPO / "scenarios" / "ddp_uneven.py"
CULPRITS = {number for number, text in enumerate(SCENARIO.read_text().splitlines(), 1) if "# vramlens: culprit" in text}


def meta_of(folder: Path) -> dict:
    return json.loads((folder / "capture.json").read_text())


JOBS = [f"{backend}/{job}" for backend in ("two_gpu_nccl", "one_gpu_gloo") for job in ("ddp_uneven", "ddp_two_nodes")]


@pytest.fixture(scope="module", params=JOBS)
def job(request):
    return request.param, analyze_ranks(FIXTURES / request.param, source_root=str(REPO))


def test_every_rank_is_found_wherever_its_launcher_wrote_it(job):
    name, comparison = job
    assert [summary.rank for summary in comparison.ranks] == [0, 1]
    assert comparison.world_size == 2 and comparison.missing_ranks == [] and comparison.notes == []
    assert len({summary.pid for summary in comparison.ranks}) == 2
    if name.endswith("ddp_two_nodes"):  # each launcher wrote the rank it ran into its own folder
        assert {Path(summary.capture).parent.name for summary in comparison.ranks} == {"node0", "node1"}
        assert [summary.node_rank for summary in comparison.ranks] == [0, 1]
        assert [summary.local_rank for summary in comparison.ranks] == [0, 0]


def test_the_rank_that_ran_out_is_told_from_the_one_that_only_followed(job):
    name, comparison = job
    failing, follower = comparison.ranks[1], comparison.ranks[0]
    assert comparison.failing_rank == 1 and comparison.failing_index == comparison.default_index == 1
    assert failing.ending == "oom" and not failing.collateral and failing.analysis.outcome == "oom"
    assert follower.collateral and follower.analysis.outcome == "completed"  # no OOM of its own
    if name.startswith("one_gpu_gloo"):  # gloo's all-reduce raised when the peer's connection closed
        assert follower.ending == "collective_error" and "Connection closed by peer" in follower.exception
    else:  # NCCL's all-reduce just waits: torchrun's SIGTERM ended it
        assert follower.ending == "stopped" and follower.status == "terminated" and follower.exception is None
    assert follower.failed_at > failing.failed_at
    assert follower.ending_text.endswith("after rank 1 ran out of memory; no OOM of its own.")


def test_nccl_ranks_show_their_communicator_memory_outside_pytorch():
    """The same script on the same GPU model and torch: with NCCL every rank holds hundreds of MiB more
    outside PyTorch's allocator than over gloo — the communicator's buffers."""
    nccl = analyze_ranks(NCCL / "ddp_uneven", source_root=str(REPO))
    gloo = analyze_ranks(RANKS / "ddp_uneven", source_root=str(REPO))
    for with_nccl, with_gloo in zip(nccl.ranks, gloo.ranks):
        assert with_nccl.outside_pytorch - with_gloo.outside_pytorch > 512 * 2**20
    assert [summary.device_index for summary in nccl.ranks] == [0, 1]  # one GPU per rank


def test_peaks_and_memory_outside_pytorch_per_rank_come_from_each_capture(job):
    _, comparison = job
    for summary in comparison.ranks:
        meta = meta_of(Path(summary.capture))
        assert summary.peak_allocated == meta["stats"]["peak_allocated"]
        assert summary.peak_reserved == meta["stats"]["peak_reserved"]
        assert summary.outside_pytorch == meta["exit_nvml"]["process_used"] - meta["stats"]["reserved"]
        assert summary.outside_pytorch > 500 * 2**20  # at least the CUDA context
        assert summary.peak_driver_visible >= summary.peak_reserved and summary.driver_visible_scope == "process"


def test_imbalance_names_the_rank_with_the_larger_batch(job):
    _, comparison = job
    peak = comparison.imbalance["peak_allocated"]
    assert (peak.max_rank, peak.min_rank) == (1, 0)
    assert peak.ratio == pytest.approx(comparison.ranks[1].peak_allocated / comparison.ranks[0].peak_allocated)
    assert peak.ratio > 1.5  # 8× the batch: the activations, not the shared model, differ


def test_the_lines_that_differ_most_are_the_batch_lines(job):
    _, comparison = job
    top = comparison.lines[0]
    assert top.path == "ddp_uneven.py" and top.line in CULPRITS and top.high_rank == 1
    assert top.spread == top.live_by_rank[1] - top.live_by_rank[0] > 2**30
    # The hover for that line in the local file finds the same spread.
    assert comparison.spread_at(str(SCENARIO), top.line) is top
    assert comparison.spread_at(str(SCENARIO), 1) is None


def test_json_keeps_schema_1_at_the_top_and_adds_ranks(job):
    _, comparison = job
    report = comparison_to_json(comparison)
    ranks = report.pop("ranks")
    assert report == to_json(comparison.ranks[1].analysis)  # a schema-1 reader sees the failing rank
    assert ranks["failing_rank"] == ranks["shown_rank"] == 1
    assert [entry["rank"] for entry in ranks["per_rank"]] == [0, 1]
    assert ranks["per_rank"][0]["analysis"]["outcome"] == "completed"
    assert ranks["imbalance"]["peak_allocated"]["max_rank"] == 1
    assert all(line["spread"] > 0 for line in ranks["lines"])
    json.dumps(report)


def test_a_missing_rank_is_noted_and_the_rest_still_compared(tmp_path):
    shutil.copytree(RANKS / "ddp_two_nodes" / "node1", tmp_path / "node1")
    comparison = analyze_ranks(tmp_path, source_root=str(REPO))
    assert [summary.rank for summary in comparison.ranks] == [1] and comparison.missing_ranks == [0]
    assert comparison.failing_rank == 1
    assert any("No capture of rank 0 (of 2)" in note for note in comparison.notes)


def test_a_rank_copied_twice_is_compared_once(tmp_path):
    shutil.copytree(RANKS / "ddp_uneven", tmp_path / "run")
    shutil.copytree(RANKS / "ddp_uneven" / "rank-0", tmp_path / "copy" / "rank-0")
    comparison = analyze_ranks(tmp_path, source_root=str(REPO))
    assert [summary.rank for summary in comparison.ranks] == [0, 1]
    assert any("Rank 0 has more than one capture" in note for note in comparison.notes)


def test_only_the_latest_launch_below_a_folder_is_compared(tmp_path):
    shutil.copytree(FIXTURES, tmp_path / "runs")
    comparison = analyze_ranks(tmp_path, source_root=str(REPO))
    latest = max((meta_of(path.parent)["ended_epoch"], path.parent) for path in tmp_path.rglob("capture.json"))[1]
    assert latest in {Path(summary.capture) for summary in comparison.ranks} and len(comparison.ranks) == 2
    assert any("6 captures from 3 other launches" in note for note in comparison.notes)


def test_a_folder_without_ranks_says_so(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(CaptureError, match="holds no ranks' captures"):
        analyze_ranks(tmp_path / "empty")


def test_one_rank_analyzed_alone_is_the_ordinary_analysis():
    alone = analyze_path(RANKS / "ddp_uneven" / "rank-1", source_root=str(REPO))
    assert alone.outcome == "oom" and alone.diagnosis.cause == "working_set"


def test_cli_prints_the_comparison_then_the_failing_rank(tmp_path):
    done = subprocess.run([sys.executable, "-m", "vramlens", "analyze", str(RANKS / "ddp_two_nodes"), "--source-root",
                           str(REPO)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "(2 ranks of 2)" in text and "Failing rank: 1 — ran out of memory (request 256.00 MiB) first." in text
    assert "Rank 0 saw its collective fail" in text and "── Rank 1 (the failing rank) ──" in text
    assert "Lines whose live bytes differ most between ranks" in text


def test_report_on_a_folder_of_ranks_is_the_failing_ranks_and_says_which(tmp_path):
    done = subprocess.run([sys.executable, "-m", "vramlens", "report", str(RANKS / "ddp_uneven"), "--source-root",
                           str(REPO)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "this is rank 1 (the failing rank)" in done.stderr
    assert "| Rank | 1 of 2 (local rank 1, node 0, host vm, backend gloo) |" in done.stdout
