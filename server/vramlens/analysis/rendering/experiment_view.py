"""A controlled experiment (`vramlens experiment`'s JSON) as rows people read: per variant its medians with
their (min–max) over the runs, its verdict against the baseline and which differences exceed the run-to-run
noise, then the notes under the table. `vramlens experiment`'s text and the report view draw these cells."""

from __future__ import annotations

from vramlens.analysis.experiments.comparison import LABELS
from vramlens.analysis.experiments.experiment import chosen_sentence
from vramlens.units import format_bytes as fmt

COLUMNS = ["variant", "OOM", "peak allocated", "peak reserved", "driver-visible peak", "fragmentation at OOM",
           "run time", "verdict"]
METRICS = {"oom": "OOM", **LABELS}
ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF="
NOTHING_CHOSEN = "none — no variant beat the baseline beyond the run-to-run noise."


def spread_cell(spread: dict | None, show) -> str:
    """The median, and its (min–max) when the runs differed; "—" when nothing was measured."""
    if not spread:
        return "—"
    if spread["n"] == 1 or spread["min"] == spread["max"]:
        return show(spread["median"])
    return f"{show(spread['median'])} ({show(spread['min'])}–{show(spread['max'])})"


def _bytes(value) -> str:
    return fmt(int(value))


def _share(value) -> str:
    return f"{value:.0%}"


def _seconds(value) -> str:
    return f"{value:.2f} s"


def short_label(label: str) -> str:
    """A variant's label without the variable every allocator setting shares (a note names it)."""
    return label[len(ALLOC_CONF):] if label.startswith(ALLOC_CONF) else label


def figure_cells(variant: dict) -> list[str]:
    """OOM count, the three peaks, fragmentation at the OOM and run time, in COLUMNS order."""
    summary = variant.get("summary") or {}
    return [f"{variant['ooms']}/{len(variant['runs'])}", spread_cell(summary.get("peak_allocated"), _bytes),
            spread_cell(summary.get("peak_reserved"), _bytes), spread_cell(summary.get("driver_peak"), _bytes),
            spread_cell(variant.get("fragmentation_at_oom"), _share), spread_cell(summary.get("duration_s"), _seconds)]


def _difference(item: dict) -> str:
    return f"{METRICS.get(item['metric'], item['metric'])}: {item['text']}"


def experiment_rows(data: dict) -> list[dict]:
    """Per variant: its cells (COLUMNS order, the label shortened), and its measured differences split by
    whether they exceed the noise, as the comparison judged them."""
    rows = []
    for variant in data.get("variants") or ():
        measured = [item for item in variant.get("differences") or () if item.get("change") is not None]
        verdict = variant.get("verdict") or ("" if variant.get("differences") else "the baseline")
        rows.append({"cells": [short_label(variant["label"]), *figure_cells(variant), verdict],
                     "beyondNoise": [_difference(item) for item in measured if item.get("real")],
                     "withinNoise": [_difference(item) for item in measured if not item.get("real")]})
    return rows


def chosen_words(data: dict) -> str:
    sentence = chosen_sentence(data)
    return f"Chosen intervention: {sentence}" if sentence else f"Chosen intervention: {NOTHING_CHOSEN}"


def search_summary(search: dict) -> list[str]:
    tried = ", ".join(f"{probe['value']} {'fits' if probe['fits'] else 'OOM'}" for probe in search["probes"])
    answer = "none fits" if search["largest_fit"] is None else str(search["largest_fit"])
    notes = [f"Largest {search['argument']} under {search['limit']}: {answer} ({search['outcome']}; tried {tried})."]
    for metric, fit in (search.get("fit") or {}).items():
        if not fit:
            continue
        quality = "two values: no R²" if fit["r_squared"] is None else f"R² {fit['r_squared']:.3f}"
        meets = "" if fit["predicted_max"] is None else f"; meets the limit at {fit['predicted_max']}"
        notes.append(f"{METRICS.get(metric, metric)} ≈ {_bytes(fit['intercept_bytes'])} + "
                     f"{_bytes(fit['slope_bytes_per_unit'])} per unit ({quality}{meets}).")
    return notes


def experiment_notes(data: dict) -> list[str]:
    """The sentences under the table: the shared setting, the cap, the search's answer and fit, the choice,
    why it stopped early."""
    notes = []
    if any(variant["label"] != short_label(variant["label"]) for variant in data.get("variants") or ()):
        notes.append("Allocator settings were set in PYTORCH_CUDA_ALLOC_CONF; figures are medians with (min–max) over the runs.")
    if data.get("memory_limit"):
        notes.append(f"Every run capped at {data['memory_limit']}.")
    if data.get("search"):
        notes += search_summary(data["search"])
    notes.append(chosen_words(data))
    if data.get("stopped"):
        notes.append(f"Stopped early: {data['stopped']}")
    return notes


def experiment_title(data: dict) -> str:
    script = str(data.get("script") or "").replace("\\", "/").rsplit("/", 1)[-1]
    repeats = f" ({data['repeats']} runs per variant)" if data.get("repeats") else ""
    return f"Controlled experiment{f' — {script}' if script else ''}{repeats}"


def experiment_json(data: dict | None) -> dict | None:
    """The experiment as the report view receives it: labels only, it formats nothing itself."""
    if not isinstance(data, dict):
        return None
    return {"title": experiment_title(data), "columns": COLUMNS, "rows": experiment_rows(data),
            "notes": experiment_notes(data),
            "legend": {"beyond": "beyond the run-to-run noise", "within": "within noise"}}
