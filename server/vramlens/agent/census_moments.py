"""When the tensor census is taken: at each OOM, at the end, on demand, and near the peak.

At the OOM it runs inside the OOM observer, right after the snapshot, while the failing
allocation's Python frames are still on the stack. A script that catches OOMs and retries
would pay a census per OOM: together they may take at most ``OOM_TOTAL_BUDGETS`` budgets,
and an OOM past that gets none (the capture then has no census rather than an older one).

Near the peak it runs from the live-status thread, which reads allocated memory every half
second: a census is taken when allocated has grown past the last peak census by 10 % (and at
least 64 MiB), and never more often than keeps the census within 1 % of the run's time — so
its cost is bounded by construction, whatever the process' size.
"""

from __future__ import annotations

import time

from .census import take_census

MIB = 2**20
BUDGET_S = 1.0
OOM_TOTAL_BUDGETS = 10


class CensusMoments:
    def __init__(self, torch, source_root: str | None, budget_s: float = BUDGET_S):
        self.torch = torch
        self.source_root = source_root
        self.budget_s = budget_s
        self.device: int | None = None  # whose allocated/reserved figures a census records
        self._oom_seconds = 0.0
        self._oom_skipped = 0

    def take(self, moment: str) -> dict | None:
        try:
            return take_census(self.torch, moment, budget_s=self.budget_s, source_root=self.source_root,
                               device=self.device)
        except Exception:  # take_census never raises; this is for a census package that failed to load
            return None

    def at_oom(self) -> dict | None:
        if self._oom_seconds >= self.budget_s * OOM_TOTAL_BUDGETS:
            self._oom_skipped += 1
            return None
        census = self.take("oom")
        if census is not None:
            self._oom_seconds += census.get("duration_s") or 0.0
        return census

    def notes(self) -> list[str]:
        if not self._oom_skipped:
            return []
        return [f"No census was taken at {self._oom_skipped} later OOMs: the censuses at earlier OOMs had "
                f"taken {self._oom_seconds:.1f} s, the most the run allows them."]


class PeakWatch:
    """Given allocated bytes now and then (by the live-status thread), keeps the census taken
    at the highest allocated figure seen, within its share of the run's time."""

    GROWTH = 0.10  # grown by this share of the last peak census' allocated bytes…
    FLOOR = 64 * MIB  # …and by at least this much (a run below it gets no peak census)
    DUTY = 0.01  # the peak censuses together take at most this share of the run's time
    MIN_INTERVAL_S = 5.0

    def __init__(self, take):
        self._take = take  # (moment) -> census or None
        self.census: dict | None = None
        self._threshold = self.FLOOR
        self._not_before = 0.0

    def observe(self, allocated: int) -> None:
        if allocated < self._threshold or time.monotonic() < self._not_before:
            return
        census = self._take("peak")
        if census is None:
            return
        figure = (census.get("device") or {}).get("allocated") or allocated
        self.census = census
        self._threshold = figure + max(int(figure * self.GROWTH), self.FLOOR)
        self._not_before = time.monotonic() + max(self.MIN_INTERVAL_S, (census.get("duration_s") or 0.0) / self.DUTY)
