"""Repeated runs per variant → medians with their spread, and which differences beat the noise.

The noise test, kept simple on purpose (docs/experiments.md):
- a figure's noise is the larger of the two variants' ranges (max − min over their runs), and
  never less than a floor: 1% of the larger median and 2 MiB for bytes (the allocator's
  rounding), 10% of the larger median for run time (process start-up varies that much);
- a difference between medians is real when it is larger than that noise, else within noise;
- an OOM outcome differs for real only when each variant behaved the same in all its runs
  (e.g. 3/3 OOM against 0/3); mixed outcomes are reported as flaky.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from vramlens.analysis.experiments.measurement import METRICS, RunMeasurement
from vramlens.analysis.experiments.variants import Variant
from vramlens.units import format_bytes

LABELS = {"peak_allocated": "peak allocated", "peak_reserved": "peak reserved", "driver_peak": "driver-visible peak",
          "oom_cached": "cached at the OOM", "duration_s": "run time"}
RELATIVE_FLOOR = {"bytes": 0.01, "seconds": 0.10}
ABSOLUTE_FLOOR = {"bytes": 2 * 1024 * 1024, "seconds": 0.0}


@dataclass
class Spread:
    median: float
    low: float
    high: float
    n: int

    @property
    def range(self) -> float:
        return self.high - self.low


@dataclass
class Difference:
    metric: str  # one of METRICS, or "oom"
    baseline: float | None
    variant: float | None
    change: float | None  # variant − baseline (medians); for "oom": change in OOM runs' share
    noise: float | None
    real: bool
    text: str


@dataclass
class VariantSummary:
    variant: Variant
    runs: list[RunMeasurement]
    spreads: dict[str, Spread | None] = field(default_factory=dict)
    differences: list[Difference] = field(default_factory=list)  # against the baseline; empty for it

    @property
    def ooms(self) -> int:
        return sum(run.oom for run in self.runs)

    @property
    def oom_outcome(self) -> str:
        """"always", "never" or "sometimes" over its runs."""
        return "never" if self.ooms == 0 else "always" if self.ooms == len(self.runs) else "sometimes"

    def median(self, metric: str) -> float | None:
        spread = self.spreads.get(metric)
        return None if spread is None else spread.median


def spread(values: list) -> Spread | None:
    known = [value for value in values if value is not None]
    if not known:
        return None
    return Spread(statistics.median(known), min(known), max(known), len(known))


def summarize(variant: Variant, runs: list[RunMeasurement]) -> VariantSummary:
    spreads = {metric: spread([getattr(run, metric) for run in runs]) for metric in METRICS}
    return VariantSummary(variant, runs, spreads)


def noise_of(metric: str, base: Spread, other: Spread) -> float:
    unit = METRICS[metric]
    floor = max(ABSOLUTE_FLOOR[unit], RELATIVE_FLOOR[unit] * max(abs(base.median), abs(other.median)))
    return max(base.range, other.range, floor)


def _show(metric: str, value: float) -> str:
    return f"{value:.2f} s" if METRICS[metric] == "seconds" else format_bytes(int(value))


def _signed(metric: str, value: float) -> str:
    return ("+" if value >= 0 else "-") + _show(metric, abs(value))


def compare_metric(metric: str, base: Spread | None, other: Spread | None) -> Difference:
    if base is None or other is None:
        return Difference(metric, base and base.median, other and other.median, None, None, False, "not measured in both")
    change = other.median - base.median
    noise = noise_of(metric, base, other)
    real = abs(change) > noise
    verdict = "real" if real else "within noise"
    relative = f" ({change / base.median:+.0%})" if base.median else ""
    text = f"{_signed(metric, change)}{relative}: {verdict} (noise ±{_show(metric, noise)})"
    return Difference(metric, base.median, other.median, change, noise, real, text)


def compare_oom(base: VariantSummary, other: VariantSummary) -> Difference:
    before, after = base.oom_outcome, other.oom_outcome
    share_before, share_after = base.ooms / len(base.runs), other.ooms / len(other.runs)
    counts = f"OOM in {other.ooms}/{len(other.runs)} runs against {base.ooms}/{len(base.runs)}"
    if before == after and before != "sometimes":
        text, real = f"same outcome ({counts})", False
    elif "sometimes" in (before, after):
        text, real = f"flaky: {counts}, within noise", False
    elif before == "always":
        text, real = f"prevented the OOM ({counts})", True
    else:
        text, real = f"caused an OOM ({counts})", True
    return Difference("oom", share_before, share_after, share_after - share_before, None, real, text)


def compare(base: VariantSummary, other: VariantSummary) -> list[Difference]:
    return [compare_oom(base, other)] + [
        compare_metric(metric, base.spreads.get(metric), other.spreads.get(metric)) for metric in METRICS]


def summarize_all(measured: list[tuple[Variant, list[RunMeasurement]]]) -> list[VariantSummary]:
    """The first entry is the baseline; every other is compared with it."""
    summaries = [summarize(variant, runs) for variant, runs in measured]
    for summary in summaries[1:]:
        summary.differences = compare(summaries[0], summary)
    return summaries


def verdict(summary: VariantSummary) -> str:
    """One sentence on a variant against the baseline."""
    if not summary.differences:
        return f"baseline: OOM in {summary.ooms}/{len(summary.runs)} runs"
    oom, *figures = summary.differences
    if oom.real:  # one side's peaks stop at the failed request: they measure different things
        return f"{oom.text}; peaks not compared (one side ended at the OOM)"
    real = [d for d in figures if d.real and d.metric in ("peak_allocated", "peak_reserved", "driver_peak")]
    parts = [oom.text]
    parts += [f"{LABELS[d.metric]} {_signed(d.metric, d.change)} beyond noise" for d in real]
    if not real:
        parts.append("no memory figure moved beyond noise")
    return "; ".join(parts)


def choose(summaries: list[VariantSummary]) -> int | None:
    """The index of the variant worth adopting, or None when none beats the baseline beyond noise.

    First the variants that prevented an OOM the baseline always had, then (when the baseline
    fits) those that lowered peak reserved for real; the lowest median peak reserved wins.
    """
    def reserved(index: int) -> float:
        value = summaries[index].median("peak_reserved")
        return float("inf") if value is None else value

    prevented = [i for i, s in enumerate(summaries[1:], 1) if s.differences[0].real and s.oom_outcome == "never"]
    if prevented:
        return min(prevented, key=reserved)
    if summaries and summaries[0].oom_outcome == "never":
        lowered = [i for i, s in enumerate(summaries[1:], 1) if s.oom_outcome == "never" and any(
            d.metric == "peak_reserved" and d.real and d.change < 0 for d in s.differences)]
        if lowered:
            return min(lowered, key=reserved)
    return None
