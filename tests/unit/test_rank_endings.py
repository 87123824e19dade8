"""How a rank's ending is read from its capture.json, and which rank is named as failing first.

Tiny hand-written capture.json facts only: the rules, not a diagnosis (those are proven on the
recorded rank captures in tests/test_rank_captures.py)."""

import pytest

from vramlens.analysis.ranks.analyze import compare_ranks, ending_of


def meta(rank, status, at, exception=None, **extra):
    facts = {"rank": rank, "local_rank": rank, "world_size": 3, "node_rank": 0, "hostname": "h"}
    exc = None if exception is None else {"type": exception[0], "message": exception[1], "epoch": at}
    return {"status": status, "exit_code": 0 if status == "completed" else 1, "distributed": facts,
            "ended_epoch": at, "exception": exc, "stats": {"peak_allocated": 10, "peak_reserved": 20}, **extra}


@pytest.mark.parametrize("status, exception, ending", [
    ("oom", ("torch.OutOfMemoryError", "CUDA out of memory."), "oom"),
    ("error", ("torch.distributed.DistBackendError", "NCCL error in: ProcessGroupNCCL.cpp"), "collective_error"),
    ("error", ("RuntimeError", "[gloo/transport/tcp/pair.cc:547] Connection closed by peer [127.0.0.1]:9137"), "collective_error"),
    ("error", ("RuntimeError", "Watchdog caught collective operation timeout"), "collective_error"),
    ("error", ("ValueError", "bad batch"), "error"),
    ("exit", None, "error"),
    ("terminated", None, "stopped"),
    ("timeout", None, "stopped"),
    ("completed", None, "completed"),
])
def test_ending(status, exception, ending):
    assert ending_of(meta(0, status, 1.0, exception)) == ending


def entries(*metas):
    return [(f"/runs/rank-{m['distributed']['rank']}", m, None, None) for m in metas]


def test_the_first_own_failure_wins_over_an_earlier_collective_error():
    comparison = compare_ranks(entries(
        meta(0, "error", 5.0, ("DistBackendError", "NCCL communicator was aborted")),
        meta(1, "terminated", 9.0),
        meta(2, "oom", 6.0, ("OutOfMemoryError", "CUDA out of memory."), oom={"time": 4.5}),
    ), world_size=3)
    assert comparison.failing_rank == 2 and comparison.failing_index == 2
    assert [summary.collateral for summary in comparison.ranks] == [True, True, False]
    assert comparison.ranks[0].ending_text.startswith("saw its collective fail (DistBackendError: NCCL communicator")
    assert "0.5 s after rank 2 ran out of memory; no OOM of its own." in comparison.ranks[0].ending_text
    assert comparison.ranks[1].ending_text.startswith("was ended by SIGTERM (torchrun stops every rank once one fails) 4.5 s")


def test_without_an_own_failure_the_earliest_broken_collective_is_named():
    comparison = compare_ranks(entries(
        meta(0, "error", 7.0, ("DistBackendError", "NCCL timeout")),
        meta(1, "error", 3.0, ("DistBackendError", "NCCL timeout")),
    ))
    assert comparison.failing_rank == 1 and comparison.ranks[0].collateral and not comparison.ranks[1].collateral


def test_a_job_that_completed_names_no_failing_rank():
    comparison = compare_ranks(entries(meta(0, "completed", 1.0), meta(1, "completed", 1.0)))
    assert comparison.failing_rank is None and comparison.failing_index is None
    assert not any(summary.collateral for summary in comparison.ranks)
    assert comparison.imbalance["peak_allocated"].ratio == 1.0


def test_ranks_on_several_hosts_warn_about_their_clocks():
    second = meta(1, "terminated", 2.0)
    second["distributed"]["hostname"] = "other"
    comparison = compare_ranks(entries(meta(0, "oom", 1.0, ("OutOfMemoryError", "x")), second))
    assert any("2 hosts" in note for note in comparison.notes)
