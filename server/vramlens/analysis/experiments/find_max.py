"""The largest value of a numeric argument that fits under a memory limit: bisection over real runs,
and the per-unit memory slope fitted from the runs that fit.

The search is a plain state machine (ask ``next_value``, run it, ``record`` whether it fit), so
the same logic drives real runs and the tests on recorded ones. Without an upper bound it
doubles from ``lo`` until a run fails, then bisects on the grid lo, lo+step, lo+2·step, …
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_DOUBLINGS = 20


@dataclass
class LineFit:
    slope: float  # bytes per unit of the argument
    intercept: float  # bytes at zero: weights, optimizer state, CUDA workspaces
    r_squared: float | None  # None with only two distinct points: a line through them fits exactly
    points: int

    def predict(self, value: float) -> float:
        return self.intercept + self.slope * value

    def solve(self, limit: int) -> float | None:
        """The value at which the fitted line reaches ``limit``."""
        return (limit - self.intercept) / self.slope if self.slope > 0 else None


def fit_line(points: list[tuple[float, float]]) -> LineFit | None:
    """Least squares y = a + b·x; None with fewer than two distinct x."""
    if len({x for x, _ in points}) < 2:
        return None
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    r_squared = None
    if len({x for x, _ in points}) > 2:
        total = sum((y - mean_y) ** 2 for _, y in points)
        residual = sum((y - intercept - slope * x) ** 2 for x, y in points)
        r_squared = 1.0 - residual / total if total else 1.0
    return LineFit(slope, intercept, r_squared, n)


class MaxSearch:
    def __init__(self, lo: int, hi: int | None = None, step: int = 1):
        if lo < 1 or step < 1 or (hi is not None and hi <= lo):
            raise ValueError("the search needs 1 ≤ lo < hi and a step of at least 1")
        self.lo, self.hi, self.step = lo, hi, step
        self.tried: dict[int, bool] = {}
        self.largest_fit: int | None = None
        self.smallest_failure: int | None = None

    def record(self, value: int, fits: bool) -> None:
        self.tried[value] = fits
        if fits and (self.largest_fit is None or value > self.largest_fit):
            self.largest_fit = value
        if not fits and (self.smallest_failure is None or value < self.smallest_failure):
            self.smallest_failure = value

    def _on_grid(self, value: int) -> int:
        return self.lo + (value - self.lo) // self.step * self.step

    def next_value(self) -> int | None:
        """The next value to run, or None when the search is over."""
        if self.lo not in self.tried:
            return self.lo
        if self.largest_fit is None:
            return None  # even lo does not fit
        if self.smallest_failure is None:
            if self.hi is not None:
                return None if self.hi in self.tried else self.hi
            if len(self.tried) > MAX_DOUBLINGS:
                return None
            return self._on_grid(self.largest_fit * 2) if self.largest_fit * 2 - self.lo >= self.step else self.lo + self.step
        middle = self._on_grid((self.largest_fit + self.smallest_failure) // 2)
        return middle if self.largest_fit < middle < self.smallest_failure else None

    @property
    def outcome(self) -> str:
        """Once over: "found", "lo_fails" or "upper_bound_fits"."""
        if self.largest_fit is None:
            return "lo_fails"
        return "found" if self.smallest_failure is not None else "upper_bound_fits"
