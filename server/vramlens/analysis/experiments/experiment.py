"""An experiment's raw runs → its documented JSON (docs/experiments.md): the table per variant,
the differences that beat the noise, the chosen intervention, and the search for a largest value.

``experiment_json`` is the one place that JSON is built; `vramlens experiment --json` prints it
and the language server sends it to the report view under ``experiment``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vramlens.analysis.experiments.comparison import (
    ABSOLUTE_FLOOR, RELATIVE_FLOOR, Spread, VariantSummary, choose, spread, summarize_all, verdict,
)
from vramlens.analysis.experiments.find_max import fit_line
from vramlens.analysis.experiments.measurement import METRICS, RunMeasurement
from vramlens.analysis.experiments.variants import SourceEdit, Variant
from vramlens.units import format_bytes

SCHEMA = "vramlens-experiment"
SCHEMA_VERSION = 1
NOISE_RULE = ("a difference of medians is real when it exceeds the larger of the two variants' ranges "
              "(max - min over their runs), and at least a floor: 1% of the larger median and 2 MiB for bytes, "
              "10% for run time; an OOM outcome differs for real only when each variant behaved the same in all its runs")


@dataclass
class SearchRecord:
    argument: str  # e.g. "--batch-size"
    limit: str  # as written, e.g. "24GiB"
    limit_bytes: int | None  # None when the limit is a fraction of the device
    lo: int
    hi: int | None
    step: int
    probes: list[tuple[int, RunMeasurement]] = field(default_factory=list)  # in the order they ran


@dataclass
class ExperimentRecord:
    script: str
    args: list[str]
    repeats: int
    memory_limit: str | None  # applied to every run (the variants' common ground)
    variants: list[tuple[Variant, list[RunMeasurement]]] = field(default_factory=list)  # baseline first
    search: SearchRecord | None = None
    output_dir: str | None = None
    stopped: str | None = None  # why the experiment ended early (cancelled, a run crashed…), else None


def _spread_json(spread: Spread | None) -> dict | None:
    if spread is None:
        return None
    return {"median": spread.median, "min": spread.low, "max": spread.high, "n": spread.n}


def _variant_json(summary: VariantSummary) -> dict:
    variant = summary.variant
    return {
        "label": variant.label,
        "kind": variant.kind,
        "alloc_conf": variant.alloc_conf,
        "memory_limit": variant.memory_limit,
        "argument": variant.argument,
        "value": variant.value,
        "runs": [run.to_json() for run in summary.runs],
        "ooms": summary.ooms,
        "fragmentation_at_oom": _spread_json(_fragmentation(summary.runs)),
        "summary": {metric: _spread_json(summary.spreads.get(metric)) for metric in METRICS},
        "differences": [{"metric": d.metric, "baseline": d.baseline, "variant": d.variant, "change": d.change,
                         "noise": d.noise, "real": d.real, "text": d.text} for d in summary.differences],
        "verdict": verdict(summary),
        # the line an edit variant changed (only there: the JSON of every other experiment stays as it was)
        **({"edit": variant.edit.to_json()} if variant.edit is not None else {}),
    }


def _fragmentation(runs: list[RunMeasurement]) -> Spread | None:
    return spread([run.fragmentation for run in runs])


def _chosen_json(summaries: list[VariantSummary], search: dict | None) -> dict | None:
    index = choose(summaries) if len(summaries) > 1 else None
    if index is not None:
        summary = summaries[index]
        return {"source": "variants", "index": index, "label": summary.variant.label, "text": verdict(summary)}
    if search and search.get("largest_fit") is not None:
        label = f"{search['argument']} {search['largest_fit']}"
        return {"source": "search", "index": None, "label": label,
                "text": f"the largest value that fit under {search['limit']} ({search['outcome']})"}
    return None


def _search_json(search: SearchRecord) -> dict:
    fits = [(value, run) for value, run in search.probes if not run.oom and run.status == "completed"]
    largest = max((value for value, _ in fits), default=None)
    failures = [value for value, run in search.probes if run.oom]
    smallest_failure = min((value for value in failures if largest is None or value > largest), default=None)
    outcome = "lo_fails" if largest is None else "found" if smallest_failure is not None else "upper_bound_fits"
    fits_json = {}
    for metric in ("peak_allocated", "peak_reserved"):
        fit = fit_line([(value, getattr(run, metric)) for value, run in fits if getattr(run, metric) is not None])
        predicted = fit.solve(search.limit_bytes) if fit and search.limit_bytes else None
        fits_json[metric] = None if fit is None else {
            "slope_bytes_per_unit": fit.slope, "intercept_bytes": fit.intercept, "r_squared": fit.r_squared,
            "points": fit.points, "predicted_max": None if predicted is None else int(predicted)}
    return {
        "argument": search.argument, "limit": search.limit, "limit_bytes": search.limit_bytes,
        "lo": search.lo, "hi": search.hi, "step": search.step,
        "probes": [{"value": value, "fits": not run.oom and run.status == "completed", **run.to_json()}
                   for value, run in search.probes],
        "largest_fit": largest, "smallest_failure": smallest_failure, "outcome": outcome, "fit": fits_json,
    }


def experiment_json(record: ExperimentRecord) -> dict:
    measured = [(variant, runs) for variant, runs in record.variants if runs]  # a stopped experiment may leave some unrun
    summaries = summarize_all(measured) if measured else []
    search = _search_json(record.search) if record.search else None
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "script": record.script,
        "args": list(record.args),
        "repeats": record.repeats,
        "memory_limit": record.memory_limit,
        "output_dir": record.output_dir,
        "stopped": record.stopped,
        "noise": {"rule": NOISE_RULE, "relative_floor": dict(RELATIVE_FLOOR), "absolute_floor": dict(ABSOLUTE_FLOOR)},
        "variants": [_variant_json(summary) for summary in summaries],
        "chosen": _chosen_json(summaries, search),
        "search": search,
    }


def record_from_json(data: dict) -> ExperimentRecord:
    """The raw runs back out of an experiment's JSON, to recompute or compare them."""
    variants = []
    for item in data.get("variants") or []:
        variant = Variant(item["kind"], item.get("alloc_conf"), item.get("memory_limit"), item.get("argument"),
                          item.get("value"), SourceEdit.from_json(item.get("edit")))
        variants.append((variant, [RunMeasurement.from_json(run) for run in item.get("runs") or []]))
    search = None
    if data.get("search"):
        s = data["search"]
        search = SearchRecord(s["argument"], s["limit"], s.get("limit_bytes"), s["lo"], s.get("hi"), s.get("step", 1),
                              [(probe["value"], RunMeasurement.from_json(probe)) for probe in s.get("probes") or []])
    return ExperimentRecord(data.get("script", ""), data.get("args") or [], data.get("repeats", 1),
                            data.get("memory_limit"), variants, search, data.get("output_dir"), data.get("stopped"))


def chosen_sentence(data: dict) -> str | None:
    """The chosen intervention and its measured result, in one sentence (the report's item 7)."""
    chosen = data.get("chosen")
    if not chosen:
        return None
    if chosen["source"] == "search":
        fit = (data["search"]["fit"] or {}).get("peak_reserved")
        slope = ""
        if fit:
            quality = f"R² {fit['r_squared']:.3f}" if fit["r_squared"] is not None else "two points, no fit quality"
            slope = f"; peak reserved grows {format_bytes(int(fit['slope_bytes_per_unit']))} per unit ({quality})"
        return f"{chosen['label']}: {chosen['text']}{slope}."
    variant = data["variants"][chosen["index"]]
    return f"{chosen['label']}: {chosen['text']} — {len(variant['runs'])} runs per variant."
