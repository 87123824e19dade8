"""Round 6 of the real workloads (tests/fixtures/realworld/round6, recorded on an H200; scripts in
workloads/retention/): held out until measured once (BENCHMARKS.md, "Round 6"), in sample from here on. For
each retention workload the line the user is sent to is the storing line and the top holder is what it stores
into; every cause matches the confirming runs' label, the counter-case included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.workloads import unpack
from vramlens.analysis import analyze_path

REPO = Path(__file__).resolve().parents[1]
ROUND6 = REPO / "tests" / "fixtures" / "realworld" / "round6"
SOURCES = REPO / "workloads" / "retention"
TRUTH = json.loads((REPO / "benchmarks" / "storing_truth_round6.json").read_text())
RETENTION = sorted(name for name in TRUTH if not name.startswith("_"))


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("round6")
    unpack.extract_compressed(ROUND6, folder)
    return folder


@pytest.fixture(scope="module")
def analysed(captures):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = analyze_path(captures / name / "capture", source_root=str(SOURCES))
        return cache[name]
    return get


@pytest.mark.parametrize("name", sorted(path.name[:-len(".tar.xz")] for path in ROUND6.glob("*.tar.xz")))
def test_the_cause_is_the_measured_one(captures, analysed, name):
    measured = json.loads((captures / name / "ground_truth.json").read_text())
    assert measured["rule"] in ("R3b", "R4")  # labelled by confirming runs
    assert analysed(name).diagnosis.cause == measured["cause"]


@pytest.mark.parametrize("name", RETENTION)
def test_the_storing_line_is_the_first_place_and_holds_the_top_holder(analysed, name):
    analysis = analysed(name)
    storing = analysis.storing[0]
    assert f"{Path(storing.path).name}:{storing.line}" == TRUTH[name]["storing"]
    first = analysis.recommendations[0]
    assert first.actions and first.actions[0].arguments["line"] == storing.line
    top = analysis.holders[0]
    assert top.stored_at == (storing.path, storing.line)


def test_a_no_grad_first_pass_without_room_for_another_request_is_the_working_set(analysed):
    diagnosis = analysed("running_max_batch_oom").diagnosis
    assert (diagnosis.cause, diagnosis.alternative) == ("working_set", "fragmentation")
    assert diagnosis.confidence < 0.75 and diagnosis.confirm is not None
    assert any("not room for one more of its size" in fact for fact in diagnosis.evidence)
