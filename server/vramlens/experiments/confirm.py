"""`vramlens run --confirm` and the editor's "Confirm the diagnosis": run the experiment that
separates the two most likely causes (analysis/diagnosis/confirm.py) through the
experiment engine, then write the verdict into the capture so every view shows the cause as
confirmed by measurement, or revised."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Callable

from vramlens.agent.capture_writer import META_FILE, write_json_atomically
from vramlens.analysis import analyze_path
from vramlens.analysis.experiments.variants import BASELINE, SourceEdit, Variant
from vramlens.analysis.model import ConfirmPlan
from vramlens.analysis.diagnosis.confirm import judge, plan_kind
from vramlens.capture.errors import CaptureError
from vramlens.experiments.engine import ExperimentPlan, run_experiment, variant_row
from vramlens.runner.launch import RunOptions


def _variant(spec: dict) -> Variant:
    if spec["kind"] == "allocator":
        return Variant("allocator", alloc_conf=spec["setting"])
    if spec["kind"] == "memory_limit":
        return Variant("memory_limit", memory_limit=spec["value"])
    return Variant("argument", argument=spec["flag"], value=spec["value"])


def _table_row(row: dict) -> dict:
    """What the advice reads of a variant: the report's row of it, the edit it ran with and its first capture
    (the one `vramlens diff` compares)."""
    first = (row.get("runs") or [{}])[0]
    return {**variant_row(row), "edit": row.get("edit"), "capture": first.get("capture")}


def _outcome(runs: list[dict], source_root: str | None) -> dict:
    """OOM only when every run ran out; the steps completed before the OOM, from the first run's capture."""
    oom = bool(runs) and all(run.get("oom") for run in runs)
    steps = None
    capture = runs[0].get("capture") if runs else None
    if capture:
        try:
            analysis = analyze_path(capture, source_root=source_root)
            steps = analysis.steps.completed if analysis.steps is not None else 0
        except CaptureError:
            steps = None
    return {"oom": oom, "completed_steps": steps, "runs": len(runs)}


def confirm(plan: ConfirmPlan, cause: str, alternative: str | None, options: RunOptions, capture_dir: Path,
            repeats: int = 1, progress: Callable[[str], None] = lambda text: None,
            cancel: threading.Event | None = None, fix: SourceEdit | None = None) -> dict:
    """Run baseline and variant ``repeats`` times each beside the capture, judge, and record the
    verdict in the capture's capture.json (key ``confirmation``). Returns that record.

    ``fix``: the storing line's proven edit (experiments/store_fix.py), run as one more variant so that the
    advice can say whether the change the user is sent to make was measured to fit."""
    output = capture_dir.with_name(capture_dir.name + "--confirm")
    variants = [BASELINE] + [_variant(v) for v in plan.variants] + ([Variant("edit", edit=fix)] if fix else [])
    experiment = run_experiment(ExperimentPlan(
        script=options.script, args=list(options.args), variants=variants,
        repeats=repeats, memory_limit=options.memory_limit_text, run=options, output_dir=output), progress, cancel)
    rows = experiment["variants"]
    source_root = str(options.source_root) if options.source_root else None
    baseline = _outcome(rows[0]["runs"] if rows else [], source_root)
    variant = _outcome(rows[1]["runs"] if len(rows) > 1 else [], source_root)
    kind = plan_kind(plan)
    if experiment.get("stopped") and not variant["runs"]:
        result = {"cause": cause, "verdict": "inconclusive", "sentence": f"The experiment stopped: {experiment['stopped']}"}
    else:
        result = judge(cause, alternative, kind, baseline, variant)
    record = {"question": plan.question, "kind": kind, "variants": plan.variants, "expectation": plan.expectation,
              "diagnosed": cause, "alternative": alternative, "baseline": baseline, "variant": variant, "result": result,
              "experiment": str(output / "experiment.json"), "table": [_table_row(row) for row in rows]}
    meta_path = capture_dir / META_FILE
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        meta["confirmation"] = record
        write_json_atomically(str(meta_path), meta)
    except (OSError, ValueError):
        pass  # the verdict is still returned and printed; the capture stays as it was
    return record
