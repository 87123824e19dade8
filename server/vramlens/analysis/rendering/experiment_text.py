"""An experiment's result as plain text: the table of variants, the verdicts, the search and the choice.

Shared by `vramlens experiment` and the editor's report of an experiment loaded without its capture.
"""

from __future__ import annotations

from vramlens.analysis.experiments.comparison import LABELS
from vramlens.analysis.rendering.experiment_view import COLUMNS, chosen_words, figure_cells
from vramlens.safe_text import one_line
from vramlens.units import format_bytes as fmt


def variant_rows(data: dict) -> list[list[str]]:
    """The table: one row per variant, medians with (min–max) over its runs (experiment_view.py's cells)."""
    rows = [COLUMNS[:-1]]
    rows += [[variant["label"], *figure_cells(variant)] for variant in data["variants"]]
    return rows


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def render_text(data: dict) -> str:
    out = [f"VRAM Lens experiment — {data['script']} {' '.join(data['args'])}".rstrip()]
    if data["memory_limit"]:
        out.append(f"Every run capped at {data['memory_limit']}.")
    if data["variants"]:
        out += ["", f"Each variant run {data['repeats']} times; medians with (min–max):", *_table(variant_rows(data))]
        out += ["", "Against the baseline (a difference is real when it exceeds the run-to-run noise):"]
        for variant in data["variants"][1:]:
            out.append(f"  {variant['label']}: {variant['verdict']}")
            out += [f"      {LABELS[d['metric']]}: {d['text']}" for d in variant["differences"][1:] if d["change"] is not None]
    if data["search"]:
        out += ["", *search_lines(data["search"])]
    out += ["", chosen_words(data)]
    if data["stopped"]:
        out += ["", f"Stopped early: {data['stopped']}"]
    return "\n".join(map(one_line, out)) + "\n"


def search_lines(search: dict) -> list[str]:
    argument = search["argument"]
    out = [f"Largest {argument} under {search['limit']} (bisection over real runs):"]
    out += [f"  {argument} {probe['value']}: {'fits' if probe['fits'] else 'OOM'}, peak reserved {fmt(probe['peak_reserved'])}"
            for probe in search["probes"]]
    if search["outcome"] == "found":
        out.append(f"  → {search['largest_fit']} fits; {search['smallest_failure']} does not.")
    elif search["outcome"] == "upper_bound_fits":
        out.append(f"  → every value tried fits, up to {search['largest_fit']}: raise --hi to look further.")
    else:
        out.append(f"  → even {argument} {search['lo']} does not fit under {search['limit']}.")
    for metric, fit in (search["fit"] or {}).items():
        if fit is None:
            continue
        quality = f"R² {fit['r_squared']:.4f}" if fit["r_squared"] is not None else "two points: no fit quality"
        predicted = f"; the fit reaches the limit at {fit['predicted_max']}" if fit["predicted_max"] is not None else ""
        out.append(f"  {metric.replace('_', ' ')} ≈ {fmt(int(fit['intercept_bytes']))} + {fmt(int(fit['slope_bytes_per_unit']))} "
                   f"per unit ({quality}, {fit['points']} runs that fit){predicted}")
    return out
