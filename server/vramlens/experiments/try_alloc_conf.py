"""Allocator settings as controlled experiments: the same run again with one setting changed.

A setting such as ``expandable_segments:True`` may or may not help a given OOM (measured: it
cured one fragmentation case and not another), so it is never assumed to work. The baseline
capture records, for each setting tried, what the run did with it, side by side.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

from vramlens.agent.capture_writer import META_FILE, write_json_atomically
from vramlens.analysis.experiments.variants import ALLOC_CONF_VAR, alloc_conf_env
from vramlens.runner.launch import RunOptions, RunResult, run_script


def run_with_experiments(options: RunOptions, settings: list[str]) -> tuple[RunResult, list[RunResult]]:
    baseline = run_script(options)
    trials = []
    for setting in settings:
        trial_dir = baseline.capture_dir.with_name(f"{baseline.capture_dir.name}--{_slug(setting)}")
        trial_options = dataclasses.replace(
            options, capture_dir=trial_dir, extra_env=dict(options.extra_env, **_with_setting(setting))
        )
        trials.append(run_script(trial_options))
    if settings:
        _record(baseline.capture_dir, settings, trials)
    return baseline, trials


def _with_setting(setting: str) -> dict:
    return alloc_conf_env(os.environ.get(ALLOC_CONF_VAR) or os.environ.get("PYTORCH_ALLOC_CONF"), setting)


def _slug(setting: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", setting).strip("-").lower()


def _measured(meta: dict) -> dict:
    stats = meta.get("stats") or {}
    oom = meta.get("oom")
    return {
        "status": meta.get("status"),
        "exit_code": meta.get("exit_code"),
        "oom": oom is not None,
        "peak_allocated": stats.get("peak_allocated"),
        "peak_reserved": stats.get("peak_reserved"),
        "num_alloc_retries": stats.get("num_alloc_retries"),
        "duration_s": meta.get("duration_s"),
    }


def _verdict(before: dict, after: dict) -> str:
    if before["oom"] and not after["oom"]:
        return "prevented the OOM"
    if before["oom"] and after["oom"]:
        return "did not prevent the OOM"
    if after["oom"]:
        return "caused an OOM that the baseline did not have"
    if before["peak_reserved"] and after["peak_reserved"] is not None:
        change = (after["peak_reserved"] - before["peak_reserved"]) / before["peak_reserved"]
        return f"changed peak reserved memory by {change:+.0%}"
    return "no OOM either way"


def _record(baseline_dir: Path, settings: list[str], trials: list[RunResult]) -> None:
    meta_path = baseline_dir / META_FILE
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    before = _measured(meta)
    interventions = []
    for setting, trial in zip(settings, trials):
        after = _measured(json.loads((trial.capture_dir / META_FILE).read_text(encoding="utf-8")))
        interventions.append({
            "setting": f"{ALLOC_CONF_VAR}={setting}",
            "capture": trial.capture_dir.name,
            "baseline": before,
            "result": after,
            "verdict": _verdict(before, after),
        })
    meta["interventions"] = interventions
    write_json_atomically(str(meta_path), meta)
