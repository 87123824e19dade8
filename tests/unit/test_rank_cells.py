"""The report view's rank table: each rank's cells as the server words them (rendering/ranks_text.py)."""

from vramlens.analysis.ranks.model import RankSummary
from vramlens.analysis.rendering.ranks_text import RANK_COLUMNS, rank_cells


def summary(**fields) -> RankSummary:
    base = dict(local_rank=None, node_rank=None, hostname=None, device_index=None, pid=None, capture="cap",
                status="oom", exit_code=1)
    return RankSummary(**{**base, **fields})


def test_rank_cells_say_how_each_rank_ended_and_which_failed_first():
    failing = summary(rank=1, ending="oom", peak_allocated=2450653184, peak_reserved=2459959296,
                      peak_driver_visible=4047503360, outside_pytorch=1593835520)
    follower = summary(rank=0, ending="stopped", collateral=True, peak_allocated=1444217344)
    assert len(rank_cells(failing, failing=True)) == len(RANK_COLUMNS)
    assert rank_cells(failing, failing=True)[:3] == ["rank 1", "out of memory — failed first", "2.28 GiB"]
    assert rank_cells(follower, failing=False)[:2] == ["rank 0", "stopped after the failing rank"]
    assert rank_cells(follower, failing=False)[4] == "—"
