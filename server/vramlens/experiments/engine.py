"""Run an experiment: every variant N times, each run a fresh process through the runner, and the
search for the largest value of an argument that fits under a memory limit.

Repeats go round-robin (baseline, A, B, baseline, A, B, …) so that a slow drift of the machine
(clocks, other users) spreads over all variants instead of favouring the one run first. Every
run keeps its capture under the experiment's folder; experiment.json sits beside them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from vramlens.agent.capture_writer import META_FILE, write_json_atomically
from vramlens.analysis.experiments.experiment import ExperimentRecord, SearchRecord, chosen_sentence, experiment_json
from vramlens.analysis.experiments.find_max import MaxSearch
from vramlens.analysis.experiments.measurement import RunMeasurement, measure
from vramlens.analysis.experiments.variants import ALLOC_CONF_VAR, SourceEdit, Variant, alloc_conf_env, with_argument
from vramlens.capture.errors import CaptureError
from vramlens.runner.launch import RunOptions, fresh_folder, run_script
from vramlens.units import parse_size_or_fraction

EXPERIMENT_FILE = "experiment.json"
MEASURED = ("completed", "oom")  # the endings an experiment can compare
CANCELLED = "The experiment was cancelled; the runs finished so far are kept."


@dataclass
class SearchPlan:
    argument: str  # the script's flag, e.g. "--batch-size"
    limit: str  # e.g. "24GiB"
    lo: int = 1
    hi: int | None = None
    step: int = 1


@dataclass
class ExperimentPlan:
    script: Path
    args: list[str] = field(default_factory=list)
    variants: list[Variant] = field(default_factory=list)  # baseline first; empty for a search alone
    repeats: int = 3
    memory_limit: str | None = None  # applied to every variant that does not set its own
    search: SearchPlan | None = None
    run: RunOptions | None = None  # interpreter, timeout, history size… shared by every run
    output_dir: Path | None = None


def default_output_dir(script: Path, folder: Path | None = None) -> Path:
    return fresh_folder("experiments", script, folder)


class Stop(Exception):
    """The experiment cannot go on; its message is the sentence for the user."""


class _Runner:
    def __init__(self, plan: ExperimentPlan, progress: Callable[[str], None], cancel: threading.Event | None):
        self.plan, self.progress, self.cancel = plan, progress, cancel
        self.base = dataclasses.replace(plan.run or RunOptions(script=plan.script), script=Path(plan.script), cancel=cancel,
                                        on_start=None)

    def run(self, capture_dir: Path, args: list[str], memory_limit: str | None, alloc_conf: str | None,
            edit: SourceEdit | None = None) -> RunMeasurement:
        if self.cancel is not None and self.cancel.is_set():
            raise Stop(CANCELLED)
        limit_bytes = limit_fraction = None
        if memory_limit:
            limit_bytes, limit_fraction = parse_size_or_fraction(memory_limit)
        env = dict(self.base.extra_env)
        if alloc_conf:
            current = env.get(ALLOC_CONF_VAR) or os.environ.get(ALLOC_CONF_VAR) or os.environ.get("PYTORCH_ALLOC_CONF")
            env.update(alloc_conf_env(current, alloc_conf))
        capture_dir.parent.mkdir(parents=True, exist_ok=True)
        options = dataclasses.replace(self.base, args=list(args), capture_dir=capture_dir, extra_env=env,
                                      memory_limit_bytes=limit_bytes, memory_limit_fraction=limit_fraction,
                                      memory_limit_text=memory_limit,
                                      source_edit=edit.to_json() if edit is not None else None)
        log = capture_dir.with_name(capture_dir.name + ".log")
        with open(log, "wb") as output:
            result = run_script(dataclasses.replace(options, output=output))
        run = measure(json.loads((result.capture_dir / META_FILE).read_text(encoding="utf-8")), str(result.capture_dir))
        if result.status == "cancelled":
            raise Stop(CANCELLED)
        if run.status not in MEASURED:
            raise Stop(f"A run ended with status {run.status} (exit code {run.exit_code}), neither completed nor out of "
                       f"memory: see its output {log}; fix the script before comparing variants.")
        return run


def run_experiment(plan: ExperimentPlan, progress: Callable[[str], None] = lambda text: None,
                   cancel: threading.Event | None = None) -> dict:
    """Run the plan and return its experiment JSON (also written to OUTPUT/experiment.json).

    Raises CaptureError only when nothing could be run at all (e.g. no CUDA in that interpreter);
    a later failure ends the experiment early with ``stopped`` saying why, keeping every run.
    """
    output = Path(plan.output_dir or default_output_dir(plan.script)).resolve()
    record = ExperimentRecord(str(plan.script), list(plan.args), plan.repeats, plan.memory_limit,
                              output_dir=str(output))
    runner = _Runner(plan, progress, cancel)
    try:
        _run_variants(plan, runner, record, output)
        if plan.search:
            _run_search(plan, runner, record, output)
    except Stop as stop:
        record.stopped = str(stop)
    except CaptureError as error:
        if cancel is not None and cancel.is_set():
            record.stopped = CANCELLED
        elif not _has_runs(record):
            raise
        else:
            record.stopped = str(error)
    data = experiment_json(record)
    output.mkdir(parents=True, exist_ok=True)
    write_json_atomically(str(output / EXPERIMENT_FILE), data)
    note_in_capture(data)
    return data


def _has_runs(record: ExperimentRecord) -> bool:
    return any(runs for _, runs in record.variants) or bool(record.search and record.search.probes)


def _run_variants(plan: ExperimentPlan, runner: _Runner, record: ExperimentRecord, output: Path) -> None:
    record.variants = [(variant, []) for variant in plan.variants]
    total = len(plan.variants) * plan.repeats
    done = 0
    for repeat in range(1, plan.repeats + 1):
        for variant, runs in record.variants:
            done += 1
            runner.progress(f"Run {done}/{total}: {variant.label} (repeat {repeat}/{plan.repeats})")
            args = with_argument(plan.args, variant.argument, variant.value) if variant.kind == "argument" else plan.args
            limit = variant.memory_limit if variant.kind == "memory_limit" else plan.memory_limit
            runs.append(runner.run(output / variant.slug / f"run-{repeat}", args, limit, variant.alloc_conf, variant.edit))


def _run_search(plan: ExperimentPlan, runner: _Runner, record: ExperimentRecord, output: Path) -> None:
    wanted = plan.search
    limit_bytes, _ = parse_size_or_fraction(wanted.limit)
    record.search = SearchRecord(wanted.argument, wanted.limit, limit_bytes, wanted.lo, wanted.hi, wanted.step)
    search = MaxSearch(wanted.lo, wanted.hi, wanted.step)
    while (value := search.next_value()) is not None:
        runner.progress(f"Search {wanted.argument}: trying {value} under {wanted.limit}")
        folder = output / "search" / f"{wanted.argument.strip('-')}-{value}"
        run = runner.run(folder, with_argument(plan.args, wanted.argument, str(value)), wanted.limit, None)
        record.search.probes.append((value, run))
        search.record(value, not run.oom)


def note_in_capture(data: dict) -> None:
    """Keep the chosen intervention with the capture a report is made from: the baseline's first run,
    or for a search alone the smallest value that did not fit (else the largest that did)."""
    capture = None
    if data["variants"] and data["variants"][0]["runs"]:
        capture = data["variants"][0]["runs"][0]["capture"]
    elif data["search"] and data["search"]["probes"]:
        probes = data["search"]["probes"]
        wanted = data["search"]["smallest_failure"] if data["search"]["smallest_failure"] is not None else data["search"]["largest_fit"]
        capture = next((probe["capture"] for probe in probes if probe["value"] == wanted), None)
    if not capture:
        return
    meta_path = Path(capture) / META_FILE
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    meta["experiment"] = {"file": str(Path(data["output_dir"]) / EXPERIMENT_FILE), "chosen": data["chosen"],
                          "sentence": chosen_sentence(data),
                          "variants": [variant_row(variant) for variant in data["variants"]],
                          "search": _search_row(data["search"]), "stopped": data["stopped"]}
    write_json_atomically(str(meta_path), meta)


def variant_row(variant: dict) -> dict:
    """What the report shows of a variant: its verdict and median figures, not every run."""
    summary = variant["summary"]
    return {"label": variant["label"], "ooms": variant["ooms"], "runs": len(variant["runs"]), "verdict": variant["verdict"],
            **{metric: (summary.get(metric) or {}).get("median") for metric in ("peak_allocated", "peak_reserved")}}


def _search_row(search: dict | None) -> dict | None:
    if not search:
        return None
    return {key: search[key] for key in ("argument", "limit", "largest_fit", "smallest_failure", "outcome", "fit")}
