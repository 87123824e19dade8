"""How a run ended, said honestly; early failures; experiment commands; advice for inference."""

import json
import re

import pytest
from test_analysis_attribution import leaky_loop
from test_analysis_builder import MIB, SnapshotBuilder, user_stack
from test_analysis_cli import run_cli, write_pickle
from test_analysis_diagnosis import GIB, analyze, capped_meta, checkerboard, crowded_device

from vramlens.analysis import to_json
from vramlens.analysis.rendering.accounting_view import accounting_rows
from vramlens.analysis.rendering.analysis_text import render_text


def healthy() -> SnapshotBuilder:
    builder = SnapshotBuilder().segment(0, 256 * MIB)
    for _ in range(20):
        builder.alloc(0, 64 * MIB, user_stack(12)).free(0)
    return builder


ENDINGS = {
    "error": ({"exception": {"type": "ValueError", "message": "bad"}, "exit_code": 1}, "no OOM; the script raised ValueError"),
    "exit": ({"exit_code": 3}, "no OOM; the script exited with code 3"),
    "interrupted": ({"duration_s": 7.2}, "no OOM; the script was interrupted (Ctrl-C) after 7 s"),
    "timeout": ({"duration_s": 12.04, "exit_code": 124}, "no OOM; ended by --timeout after 12 s"),
    "terminated": ({"duration_s": 3.0, "exit_code": 143}, "no OOM; the script was terminated by a signal after 3 s"),
    "on_demand": ({"duration_s": 30.0}, "no OOM; snapshot taken on demand after 30 s while the script was running"),
}


@pytest.mark.parametrize("status", sorted(ENDINGS))
def test_a_run_that_did_not_complete_is_never_called_completed(status):
    extra, expected = ENDINGS[status]
    analysis = analyze(healthy().snapshot(), {"status": status, **extra})
    data = to_json(analysis)
    assert data["outcome"] == "completed" and data["status"] == status  # outcome: no OOM; status: how it ended
    text = render_text(analysis, "cap")
    outcome = next(line for line in text.splitlines() if line.startswith("Outcome:"))
    assert outcome.startswith(f"Outcome: {expected}") and "completed" not in outcome
    assert not any("The run completed" in fact for fact in analysis.diagnosis.evidence)


def test_completed_and_raw_snapshot_outcomes():
    completed = analyze(healthy().snapshot(), {"status": "completed"})
    assert "Outcome: completed, no OOM" in render_text(completed, "cap")
    assert completed.diagnosis.evidence[0].startswith("The run completed without an OOM")
    raw = analyze(healthy().snapshot())
    assert to_json(raw)["status"] == "snapshot"
    assert "Outcome: raw snapshot: how the run ended is unknown" in render_text(raw, "dump.pickle")
    assert not any("completed" in fact for fact in raw.diagnosis.evidence)


@pytest.mark.parametrize("meta", [{}, {"status": "on_demand"}])
def test_snapshot_taken_mid_run_names_that_moment(meta):
    analysis = analyze(healthy().snapshot(), meta)
    text = render_text(analysis, "cap")
    assert "Memory at the allocated peak, up to the moment the snapshot was taken" in text
    assert any("up to the moment the snapshot was taken" in fact for fact in analysis.diagnosis.evidence)
    leaky = analyze(leaky_loop().snapshot(), meta)
    assert leaky.diagnosis.cause == "retained_references"
    assert "up to the moment the snapshot was taken" in leaky.diagnosis.evidence[0]


def test_script_that_failed_before_any_allocation_names_the_error_not_how_to_record(tmp_path):
    traceback = '  File "/work/proj/syn.py", line 1\n    x = (\n        ^\nSyntaxError: \'(\' was never closed\n'
    meta = {"format": "vramlens-capture", "version": 1, "snapshot": None, "status": "error", "exit_code": 1,
            "script": "/work/proj/syn.py", "argv": ["syn.py"], "source_root": "/work/proj",
            "exception": {"type": "SyntaxError", "message": "'(' was never closed", "traceback": traceback, "frames": []}}
    (tmp_path / "capture.json").write_text(json.dumps(meta))
    for command in ("analyze", "report"):
        result = run_cli(command, str(tmp_path))
        assert result.returncode == 2
        first = result.stderr.splitlines()[0]
        assert first == ("vramlens: The script ended with SyntaxError at syn.py:1 before any CUDA allocation; "
                         "nothing to analyze.")
        assert "was never closed" in result.stderr and "_record_memory_history" not in result.stderr


def test_early_exception_site_is_the_innermost_user_frame(tmp_path):
    frames = [{"filename": "/work/proj/train.py", "line": 9, "name": "<module>"},
              {"filename": "/work/proj/data.py", "line": 4, "name": "load"},
              {"filename": "/usr/lib/python3.12/json/__init__.py", "line": 293, "name": "load"}]
    meta = {"format": "vramlens-capture", "version": 1, "snapshot": None, "status": "error", "source_root": "/work/proj",
            "exception": {"type": "json.decoder.JSONDecodeError", "message": "x", "traceback": "", "frames": frames}}
    (tmp_path / "capture.json").write_text(json.dumps(meta))
    result = run_cli("analyze", str(tmp_path))
    assert "ended with JSONDecodeError at data.py:4 before any CUDA allocation" in result.stderr


def test_raw_pickle_without_a_trace_still_says_how_to_record_one(tmp_path):
    empty = write_pickle(tmp_path / "empty.pickle", {"segments": [], "device_traces": [[]]})
    result = run_cli("analyze", empty)
    assert result.returncode == 2 and "_record_memory_history" in result.stderr


def test_experiments_rerun_the_recorded_command_with_its_memory_limit():
    meta = capped_meta(1600 * MIB, 96 * MIB, argv=["serve.py", "--bs", "8", "--name", "a b"], script="/w/serve.py")
    meta["memory_limit"]["requested"] = "1600MiB"
    actions = " ".join(r.action for r in analyze(checkerboard().snapshot(), meta).recommendations)
    assert ("`vramlens run --try-alloc-conf expandable_segments:True --memory-limit 1600MiB serve.py --bs 8 "
            "--name 'a b'`") in actions
    assert "--try-alloc-conf max_split_size_mb:256 --memory-limit 1600MiB serve.py" in actions
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in actions and "PYTORCH_ALLOC_CONF" not in actions
    no_argv = analyze(checkerboard().snapshot(), capped_meta(1600 * MIB, 96 * MIB, script="/w/serve.py"))
    assert "expandable_segments:True /w/serve.py`" in " ".join(r.action for r in no_argv.recommendations)


@pytest.mark.parametrize("value, advised", [(256 * MIB, False), (2**64 - 1, True), (-1, True)])
def test_torchs_own_max_split_size_counts_as_already_set(value, advised):
    snapshot = checkerboard().snapshot(settings={"max_split_size": value})
    actions = " ".join(r.action for r in analyze(snapshot, capped_meta(1600 * MIB, 96 * MIB)).recommendations)
    assert ("max_split_size_mb:256" in actions) is advised


def test_outside_allocator_sentence_pairs_nvml_used_with_nvml_total():
    # torch reports a smaller total (78 GiB) than NVML (80 GiB): the sentence must use NVML's for both.
    analysis = crowded_device(torch_total=78 * GIB)
    assert analysis.diagnosis.cause == "outside_allocator" and analysis.accounting.driver_total == 80 * GIB
    assert_used_plus_free_is_total(analysis.diagnosis.evidence)


def assert_used_plus_free_is_total(evidence):
    pattern = re.compile(r"saw ([\d.]+) GiB in use and ([\d.]+) GiB free of the device's ([\d.]+) GiB")
    match = next(filter(None, (pattern.search(fact) for fact in evidence)))
    used, free, total = (float(value) for value in match.groups())
    assert abs(used + free - total) <= 0.011, match.group(0)
    free_again = re.search(r"met ([\d.]+) GiB free", " ".join(evidence))
    assert free_again and float(free_again.group(1)) == free  # the same free count in every sentence


def test_memory_owned_by_no_process_is_named_as_such():
    sample = {"phase": "oom", "device_total": 80 * GIB, "device_used": 4 * GIB, "process_used": 2 * GIB + 512 * MIB,
              "other_processes_used": 0}
    builder = SnapshotBuilder().segment(0, 2 * GIB).alloc(0, 1 * GIB, user_stack(30)).oom(4 * GIB, 1 * GIB)
    analysis = analyze(builder.snapshot(), {"status": "oom", "oom": {"requested": 4 * GIB, "nvml": sample}})
    remarks = " ".join(row.remark for row in accounting_rows(analysis.accounting, 0))
    assert "not attributed to any process (driver reservations) 1.50 GiB" in remarks and "no process (driver)" not in remarks


def test_inference_with_kept_outputs_is_told_to_turn_grad_mode_off():
    analysis = analyze(leaky_loop().snapshot(), {"status": "completed"})
    assert analysis.diagnosis.cause == "retained_references"
    assert analysis.mode == "inference"  # whole iterations ran without a backward pass or an optimizer
    advice = [r.action for r in analysis.recommendations[:3]]
    assert any("torch.inference_mode()" in a and "torch.no_grad()" in a for a in advice)
    assert any(".detach()" in a for a in advice)


def test_training_keeps_the_detach_advice_first():
    builder = leaky_loop()
    builder.alloc(3000 * MIB, 4 * MIB, []).free(3000 * MIB)  # the autograd engine: no Python frame
    analysis = analyze(builder.snapshot(), {"status": "completed"})
    assert analysis.diagnosis.cause == "retained_references" and analysis.mode == "training"
    assert not any("inference_mode" in r.action for r in analysis.recommendations)


def test_a_floor_that_rises_once_is_a_second_phase_not_growth():
    builder = SnapshotBuilder().segment(0, 1024 * MIB)
    for step in range(40):  # the floor rises once, half-way: a second phase, not a leak
        if step == 20:
            builder.alloc(512 * MIB, 64 * MIB, user_stack(21))
        builder.alloc(0, 8 * MIB, user_stack(21)).alloc(256 * MIB, 8 * MIB, user_stack(22)).free(0).free(256 * MIB)
    analysis = analyze(builder.snapshot())
    assert analysis.steps is not None and len(analysis.steps.steps) == 40
    line = next(line for line in analysis.lines if line.line == 21)
    assert line.growth_bytes == 0 and not line.growing
    assert analysis.diagnosis.cause != "retained_references"
