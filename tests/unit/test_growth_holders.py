"""Holders ranked by what grew (analysis/attribution/growth_holders.py), and the growth a backward pass made
(analysis/attribution/growth.py's frameless_at_peak): built by hand here; on real captures in
tests/test_holders_round5.py."""

from __future__ import annotations

from vramlens.analysis.attribution.growth import Growth, frameless_at_peak
from vramlens.analysis.attribution.growth_holders import kept_by_line, rank_by_growth
from vramlens.analysis.model import NO_FRAME_FUNCTION, Holder, LineStat, StepModel

MIB = 1 << 20
FORWARD = ("/app/train.py", 23)  # `out = model(x)`: the forward that made the activations
SUM = ("/app/train.py", 26)  # `total = total + loss`


def _steps(survivors: dict) -> StepModel:
    return StepModel(steps=[], driver=None, boundary=None, survivors_by_line=dict(survivors))


def _running_total_and_the_forwards_locals() -> list[Holder]:
    # the running sum holds no tensor of its own worth naming; its graph keeps every batch's activations,
    # made at the forward's line; the forward in progress holds its input `x`, made at that line too
    total = Holder(root="local total in evaluate", kind="frame", bytes=0, tensors=1, appended_at=SUM,
                   graph_bytes=8000 * MIB, kept_lines={FORWARD: 8000 * MIB})
    x = Holder(root="x", kind="locals", bytes=26 * MIB, tensors=1, appended_at=FORWARD, kept_lines={FORWARD: 26 * MIB})
    return [x, total]


def test_a_holder_kept_through_its_graph_is_charged_the_survivors_of_the_lines_its_graph_saved():
    holders = _running_total_and_the_forwards_locals()
    rank_by_growth(holders, _steps({FORWARD: 7900 * MIB, SUM: 0}))
    assert [h.root for h in holders] == ["local total in evaluate", "x"]
    assert holders[0].survivor_bytes == 7900 * MIB and not holders[0].working_set
    assert holders[1].survivor_bytes == 0 and holders[1].working_set  # the step's own input


def test_survivors_left_over_by_the_graph_go_to_the_next_holder_of_that_line_never_twice():
    holders = _running_total_and_the_forwards_locals()
    rank_by_growth(holders, _steps({FORWARD: 8010 * MIB}))
    by_root = {h.root: h.survivor_bytes for h in holders}
    assert by_root == {"local total in evaluate": 8000 * MIB, "x": 10 * MIB}


def test_without_the_census_blocks_a_holder_is_charged_by_the_line_that_filled_it():
    kept = Holder(root="__main__.outputs", kind="list", bytes=900 * MIB, tensors=9, appended_at=FORWARD)
    assert kept_by_line(kept) == {FORWARD: 900 * MIB}
    small = Holder(root="batch", kind="locals", bytes=50 * MIB, tensors=1, appended_at=("/app/train.py", 20))
    holders = [small, kept]
    rank_by_growth(holders, _steps({FORWARD: 800 * MIB}))
    assert holders[0] is kept and kept.survivor_bytes == 800 * MIB and small.working_set


def _growth(rise: int, carriers=()) -> Growth:
    return Growth(rate=rise // 10, intervals=10, rise=rise, floor=rise, excess=0, carriers=list(carriers))


def _line(path, line, function, live) -> LineStat:
    return LineStat(path, line, function, live, 0.0, live, 1, False)


def test_growth_a_completed_run_kept_from_its_backward_is_carried_by_the_frameless_line():
    lines = [_line(None, None, NO_FRAME_FUNCTION, 6000 * MIB), _line("/app/train.py", 28, "main", 512 * MIB)]
    assert frameless_at_peak(_growth(5000 * MIB), lines, "peak") == 5000 * MIB
    # not at the peak, growth with carriers of its own, or a frameless line smaller than half the rise: nothing
    assert frameless_at_peak(_growth(5000 * MIB), lines, "end") == 0
    assert frameless_at_peak(_growth(5000 * MIB, [(("/app/train.py", 30), 4000 * MIB)]), lines, "peak") == 0
    assert frameless_at_peak(_growth(5000 * MIB), [_line("/app/train.py", 28, "main", 6000 * MIB)] + lines[:1], "peak") == 0
    small = [_line(None, None, NO_FRAME_FUNCTION, 2000 * MIB), _line("/app/train.py", 28, "main", 1000 * MIB)]
    assert frameless_at_peak(_growth(5000 * MIB), small, "peak") == 0
    assert frameless_at_peak(None, lines, "peak") == 0
