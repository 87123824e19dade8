"""The analysis as seven stages run once each: every stage returns a frozen result, no later stage
changes an earlier one's, and the editor's per-line history rides along without changing the rest."""

import copy
import dataclasses
from pathlib import Path

import pytest

from vramlens.analysis import accounting, analyze_capture, attribution, diagnosis, load, recommendations, replay, steps, to_json
from vramlens.analysis.attribution.over_time import line_history
from vramlens.capture import load_capture

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "captures"


def run_stages(capture):
    loaded = load.read(capture, None, None)
    replayed = replay.run(loaded)
    stepped = steps.model(loaded, replayed)
    accounted = accounting.account(loaded, replayed)
    attributed = attribution.attribute(loaded, replayed, stepped, history=True)
    diagnosed = diagnosis.diagnose(loaded, replayed, stepped, accounted, attributed)
    return loaded, replayed, stepped, accounted, attributed, diagnosed


@pytest.mark.parametrize("name", ["retained_references", "fragmentation", "no_problem"])
def test_each_stage_returns_a_frozen_result(name):
    for result in run_stages(load_capture(CAPTURES / name)):
        field = dataclasses.fields(result)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(result, field, None)


def test_the_advice_leaves_the_diagnosis_and_the_lines_as_they_were_built():
    loaded, replayed, stepped, accounted, attributed, diagnosed = run_stages(load_capture(CAPTURES / "retained_references"))
    built = copy.deepcopy((diagnosed.diagnosis, attributed.lines, accounted.accounting))
    advice = recommendations.recommend(loaded, accounted, attributed, diagnosed)
    assert advice and diagnosed.diagnosis.cause == "retained_references"
    assert (diagnosed.diagnosis, attributed.lines, accounted.accounting) == built


def test_the_history_has_a_top_line_per_timeline_point_and_changes_nothing_else():
    capture = load_capture(CAPTURES / "retained_references")
    plain, with_history = analyze_capture(capture), analyze_capture(capture, history=True)
    assert plain.history is None
    assert to_json(plain) == to_json(with_history)
    points = with_history.timeline.points
    assert len(with_history.history.tops) == len(points) and with_history.history.tops[-1] is not None
    trace = capture.snapshot["device_traces"][0]
    last = line_history(trace, with_history.lines, [points[-1].index], [])
    assert with_history.history.tops[-1] == last.tops[0]
    assert with_history.history.at_steps  # the step model's steps, each line's bytes at each step's end
