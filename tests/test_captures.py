"""The analysis on real captures recorded on an H200 (tests/fixtures/captures, see its README).

For each capture: the cause the scenario was written to produce, the top user line (by live
bytes) is one the scenario marks ``# vramlens: culprit``, and the accounting adds up. Frames
point to the recording machine's paths; they are mapped onto this checkout by path suffix.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vramlens.analysis import analyze_path, to_json

REPO = Path(__file__).resolve().parents[1]
CAPTURES = REPO / "tests" / "fixtures" / "captures"
SCENARIOS = REPO / "scenarios"
MARKER = re.compile(r"#\s*vramlens:\s*culprit")

# capture -> (scenario script, expected cause)
EXPECTED = {
    "working_set": ("working_set.py", "working_set"),
    "working_set_experiment": ("working_set.py", "working_set"),
    "working_set_experiment--expandable-segments-true": ("working_set.py", "working_set"),
    "fragmentation_experiment": ("fragmentation.py", "fragmentation"),
    # The trial under expandable segments completed: nothing to diagnose, its peak is the warm-up buffer.
    "fragmentation_experiment--expandable-segments-true": ("fragmentation.py", "no_problem"),
    "working_set_stacks_all": ("working_set.py", "working_set"),
    "retained_references": ("retained_references.py", "retained_references"),
    "fragmentation": ("fragmentation.py", "fragmentation"),
    "outside_allocator": ("outside_allocator.py", "outside_allocator"),
    "cached_not_leak": ("cached_not_leak.py", "cached_not_leak"),
    "no_problem": ("no_problem.py", "no_problem"),
    "server_dump.pickle": ("server_dump.py", "retained_references"),
}


def culprit_lines(script: str) -> set[int]:
    text = (SCENARIOS / script).read_text(encoding="utf-8").splitlines()
    return {number for number, line in enumerate(text, 1) if MARKER.search(line)}


def analyze_fixture(name: str):
    path = CAPTURES / name
    if not path.exists():
        pytest.skip(f"fixture {name} not recorded yet")
    if name.endswith(".pickle"):  # a server's own dump: /srv/app/x.py maps onto scenarios/x.py
        total = int((CAPTURES / name.replace(".pickle", ".total_memory")).read_text().strip())
        return analyze_path(path, total_memory=total, source_root=str(SCENARIOS))
    return analyze_path(path, source_root=str(REPO))  # /<anywhere>/scenarios/x.py maps by its suffix


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def fixture(request):
    return request.param, analyze_fixture(request.param)


def test_cause(fixture):
    name, analysis = fixture
    assert analysis.diagnosis.cause == EXPECTED[name][1], analysis.diagnosis.evidence
    assert 0.0 <= analysis.diagnosis.confidence <= 1.0 and analysis.diagnosis.evidence


def test_top_user_line_is_a_marked_culprit(fixture):
    name, analysis = fixture
    script, _ = EXPECTED[name]
    marked = culprit_lines(script)
    user_lines = [line for line in analysis.lines if line.path is not None and line.live_bytes > 0]
    assert user_lines, "no user line holds live bytes"
    top = user_lines[0]
    if not marked or EXPECTED[name][1] == "no_problem":
        pytest.skip(f"{name}: a healthy run has no culprit")
    assert top.path.endswith(script) and top.line in marked, (top.path, top.line, marked)
    assert top.local_path == str(SCENARIOS / script)  # mapped onto this checkout by suffix
    assert "vramlens: culprit" in (top.source or "")


def test_accounting_invariants(fixture):
    _, analysis = fixture
    acc, timeline = analysis.accounting, analysis.timeline
    assert 0 <= acc.allocated <= acc.reserved
    assert acc.cached == acc.reserved - acc.allocated
    assert acc.largest_free_block is None or 0 <= acc.largest_free_block <= acc.cached
    assert timeline.peak_allocated <= timeline.peak_reserved
    assert all(point.allocated <= point.reserved for point in timeline.points)
    assert acc.allocated <= timeline.peak_allocated or acc.moment == "oom"
    if acc.driver_used is not None:
        assert acc.driver_used >= acc.reserved and acc.non_pytorch == acc.driver_used - acc.reserved
        assert acc.driver_used <= (acc.device_total or acc.driver_used)
    if acc.context_and_libraries is not None and acc.other_processes is not None:
        assert acc.context_and_libraries + acc.other_processes + (acc.unattributed or 0) == acc.non_pytorch
    live_total = sum(line.live_bytes for line in analysis.lines)
    assert abs(live_total - (acc.allocated if acc.moment != "oom" else timeline.allocated_at_oom)) <= 2 * 1024 * 1024
    assert analysis.lines == sorted(analysis.lines, key=lambda line: -line.live_bytes)


def test_oom_runs_record_the_request_and_json_is_complete(fixture):
    name, analysis = fixture
    data = to_json(analysis)
    completed = {"cached_not_leak", "no_problem", "server_dump.pickle", "fragmentation_experiment--expandable-segments-true"}
    assert data["outcome"] == ("completed" if name in completed else "oom")
    if data["outcome"] == "oom":
        assert data["memory"]["request"] and data["memory"]["request"] > 0
    assert data["cause"] == EXPECTED[name][1]
    assert [line["live_bytes"] for line in data["lines"]] == sorted((line["live_bytes"] for line in data["lines"]), reverse=True)


def test_backward_allocations_are_not_pinned_on_a_user_line():
    analysis = analyze_fixture("working_set")
    frameless = [line for line in analysis.lines if line.path is None and "autograd" in line.function]
    assert frameless and frameless[0].live_bytes > 0  # the OOM happened in loss.backward()


def test_stacks_all_gives_the_same_attribution_as_python_stacks():
    python, native = analyze_fixture("working_set"), analyze_fixture("working_set_stacks_all")
    top = lambda analysis: [(l.line, l.live_bytes) for l in analysis.lines if l.path][:3]  # noqa: E731
    assert top(python) == top(native)
    assert all("??" not in step for line in native.lines for step in line.call_path)


def test_raw_pickle_maps_server_paths_onto_local_scenarios():
    analysis = analyze_fixture("server_dump.pickle")
    top = next(line for line in analysis.lines if line.path)
    assert top.path.startswith("/srv/app/") and top.local_path == str(SCENARIOS / "server_dump.py")
    assert top.growing
    assert analysis.accounting.device_total == 150109880320


def test_measured_experiments_replace_untested_advice():
    fixed = analyze_fixture("fragmentation_experiment")
    actions = [r.action for r in fixed.recommendations]
    assert actions[0].startswith("Use PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True") and "prevented the OOM" in actions[0]
    assert not any("As an experiment, rerun with PYTORCH_CUDA_ALLOC_CONF=expandable_segments" in a for a in actions)
    not_fixed = analyze_fixture("working_set_experiment")
    assert any(a.startswith("Do not rely on PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True") for a in
               (r.action for r in not_fixed.recommendations))
    assert not_fixed.diagnosis.cause == "working_set"


def test_trial_under_expandable_segments_records_the_setting():
    trial = analyze_fixture("working_set_experiment--expandable-segments-true")
    assert trial.environment["expandable_segments"] is True
    assert not any("expandable_segments" in r.action for r in trial.recommendations)


@pytest.mark.parametrize("name", ["no_problem", "retained_references", "cached_not_leak"])
def test_ring_buffer_start_is_rebuilt_exactly_on_real_data(name):
    """Drop the older part of a real trace, as a full ring buffer would: the state rebuilt at the new
    start must equal what replaying the dropped part gives."""
    path = CAPTURES / name
    if not path.exists():
        pytest.skip(f"fixture {name} not recorded yet")
    from vramlens.analysis import analyze_capture
    from vramlens.capture import Capture, load_capture

    capture = load_capture(path)
    trace = capture.snapshot["device_traces"][0]
    for cut in (len(trace) // 3, len(trace) // 2, 2 * len(trace) // 3):
        dropped = analyze_capture(Capture({"segments": [], "device_traces": [trace[:cut]]}, {}, None)).timeline
        kept_snapshot = dict(capture.snapshot, device_traces=[trace[cut:]])
        kept = analyze_capture(Capture(kept_snapshot, capture.meta, None), source_root=str(REPO))
        assert kept.timeline.start_allocated == dropped.end_allocated
        assert kept.timeline.start_reserved == dropped.end_reserved
        assert kept.timeline.end_allocated == analyze_fixture(name).timeline.end_allocated


def test_status_is_the_recorded_one_and_a_raw_dump_is_a_snapshot():
    import json

    for name in ("no_problem", "working_set"):
        recorded = json.loads((CAPTURES / name / "capture.json").read_text())["status"]
        assert to_json(analyze_fixture(name))["status"] == recorded
    dump = analyze_fixture("server_dump.pickle")
    assert dump.status == "snapshot" and "how the run ended is unknown" in dump.outcome_text
    assert not any("completed" in fact for fact in dump.diagnosis.evidence)


def test_inference_server_is_offered_grad_mode_off():
    for name in ("server_dump.pickle", "retained_references"):  # both only run forward passes
        analysis = analyze_fixture(name)
        assert analysis.mode == "inference", name
        assert any("torch.inference_mode()" in r.action for r in analysis.recommendations[:2]), name
        assert any(".detach()" in r.action for r in analysis.recommendations[:3]), name


def test_outside_allocator_numbers_add_up_in_the_evidence():
    from test_analysis_ending import assert_used_plus_free_is_total

    assert_used_plus_free_is_total(analyze_fixture("outside_allocator").diagnosis.evidence)


def _line_containing(script: str, text: str) -> int:
    lines = (SCENARIOS / script).read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


def test_an_oom_in_backward_is_traced_to_the_line_that_started_it():
    analysis = analyze_path(CAPTURES / "working_set", source_root=str(SCENARIOS))
    site = analysis.oom.site
    assert site.autograd is True and site.line == _line_containing("working_set.py", "loss.backward()")
    assert any("autograd engine made it during the backward pass" in fact for fact in analysis.diagnosis.evidence)


def test_an_oom_with_a_python_frame_names_its_own_line():
    analysis = analyze_path(CAPTURES / "fragmentation", source_root=str(SCENARIOS))
    site = analysis.oom.site
    assert site.autograd is False and site.line == _line_containing("fragmentation.py", "merged = torch.empty")
    assert to_json(analysis)["oom"]["site"]["line"] == site.line


def test_fixtures_hold_what_the_current_agent_records():
    import json

    for meta_path in sorted(CAPTURES.glob("*/capture.json")):
        meta = json.loads(meta_path.read_text())
        assert meta["run_id"] and meta["pid"], meta_path
        assert meta["environment"]["allocator_settings"] is not None, meta_path
        assert meta["recording"]["stacks"] in ("python", "all"), meta_path
        assert any(sample["phase"] == "cuda_init" for sample in meta["nvml"]["samples"]), meta_path


def test_the_graphs_a_local_list_of_outputs_keeps_are_named_as_such():
    # The evaluation loop's `outputs` list (a local of `evaluate`) keeps every batch's output with its graph:
    # the activations those graphs saved are the largest role, not anonymous tensors.
    result = analyze_path(CAPTURES / "sample")
    assert result.diagnosis.cause == "retained_references"
    largest = max(result.roles, key=lambda share: share.bytes)
    assert largest.role == "kept_graphs" and largest.bytes > 0.5 * sum(share.bytes for share in result.roles)
    holder = next(h for h in result.holders if h.root.startswith("local outputs in evaluate"))
    assert holder.length == 18 and holder.with_graph == 18 and holder.graph_bytes > 2 * 2**30
