"""When the tensor census is taken: at each OOM, at the end, on demand, and near the peak.

At the OOM it runs where the error is first raised in Python code (agent/oom_fate.py; inside the
OOM observer before Python 3.12), while the failing call's frames are still on the stack: an OOM
a library catches below Python (cuDNN's workspace probes) costs none. A script that catches OOMs
and retries would pay a census per OOM: together they may take at most ``OOM_TOTAL_BUDGETS - 1``
budgets, and an OOM past that gets none then. The last budget is kept for the OOM that ends the
run: when its census was skipped, it is taken as the error reaches the agent (``at_final_oom``),
from the frames its traceback keeps.

Near the peak it runs from the live-status thread, which reads allocated memory every half
second: a census is taken when allocated has grown past the last peak census by 10 % (and at
least 64 MiB), and only while all peak censuses together, the next one included (expected to
take as long as the last), stay within 1 % of the time since recording began — so their cost
is bounded by construction, whatever the process' size. The first comes 5 s into the run at
the earliest; a shorter run has none (its end census remains).
"""

from __future__ import annotations

import time

from .census import take_census

MIB = 2**20
BUDGET_S = 1.0
OOM_TOTAL_BUDGETS = 10


class CensusMoments:
    """``extra_roots``: a callable giving {name: object} at each census, the further roots a holder
    may be named by (a notebook kernel's ``Out``, ``_``, ``sys.last_traceback``); ``is_user_file``:
    which files are the user's when a folder cannot say (a notebook's cells)."""

    def __init__(self, torch, source_root: str | None, budget_s: float = BUDGET_S, extra_roots=None,
                 is_user_file=None):
        self.torch = torch
        self.source_root = source_root
        self.budget_s = budget_s
        self.extra_roots = extra_roots
        self.is_user_file = is_user_file
        self.device: int | None = None  # whose allocated/reserved figures a census records
        self._oom_seconds = 0.0
        self._oom_skipped = 0
        self._not_taken: list[str] = []  # why a census that was asked for found nothing

    def take(self, moment: str, extra_roots: dict | None = None) -> dict | None:
        try:
            roots = dict(self.extra_roots() if self.extra_roots is not None else {}, **(extra_roots or {}))
            census = take_census(self.torch, moment, budget_s=self.budget_s, source_root=self.source_root,
                                 device=self.device, extra_roots=roots, is_user_file=self.is_user_file)
        except Exception:  # take_census never raises; this is for a census package that failed to load
            return None
        if "objects_scanned" not in census:
            # It never looked at the objects (another census held the walk): an empty census would
            # pass every byte off as activations, so there is none.
            self._not_taken.append(" ".join(census.get("skipped") or ()))
            return None
        return census

    def at_oom(self) -> dict | None:
        if self._oom_seconds >= self.budget_s * (OOM_TOTAL_BUDGETS - 1):
            self._oom_skipped += 1
            return None
        census = self.take("oom")
        if census is not None:
            self._oom_seconds += census.get("duration_s") or 0.0
        return census

    def at_final_oom(self, error: BaseException) -> dict | None:
        """The census of the OOM that ended the run, when none was taken at it: after the error unwound,
        with its traceback (which keeps the failing frames and their locals) as a named root."""
        census = self.take("oom", extra_roots={"<the script's exception>": error})
        if census is not None:
            census["after_unwind"] = True
            self._oom_seconds += census.get("duration_s") or 0.0
            if self._oom_skipped:
                self._oom_skipped -= 1
        return census

    def notes(self) -> list[str]:
        notes = [f"A census was asked for but not taken: {reason}" for reason in self._not_taken[:3]]
        if self._oom_skipped:
            notes.append(f"No census was taken at {self._oom_skipped} OOMs the run went on from: the censuses at earlier "
                         f"OOMs had taken {self._oom_seconds:.1f} s, the most the run allows them.")
        return notes


class PeakWatch:
    """Given allocated bytes now and then (by the live-status thread), keeps the census taken
    at the highest allocated figure seen, within its share of the run's time."""

    GROWTH = 0.10  # grown by this share of the last peak census' allocated bytes…
    FLOOR = 64 * MIB  # …and by at least this much (a run below it gets no peak census)
    DUTY = 0.01  # the peak censuses together take at most this share of the time since recording began
    FIRST_ESTIMATE_S = 0.05  # what the first is expected to take: so it comes 5 s into the run at the earliest

    def __init__(self, take):
        self._take = take  # (moment) -> census or None
        self.census: dict | None = None
        self.taken = 0
        self._threshold = self.FLOOR
        self._started = time.monotonic()
        self._spent = 0.0  # seconds the peak censuses took so far
        self._expected = self.FIRST_ESTIMATE_S  # what the next one will take: as long as the last

    def observe(self, allocated: int) -> None:
        if allocated < self._threshold:
            return
        if self._spent + self._expected > self.DUTY * (time.monotonic() - self._started):
            return
        census = self._take("peak")
        if census is None:
            return
        duration = census.get("duration_s") or 0.0
        self._spent += duration
        self._expected = max(duration, self.FIRST_ESTIMATE_S)
        figure = (census.get("device") or {}).get("allocated") or allocated
        self.taken += 1
        census["peaks_taken"] = self.taken  # this one and the lower ones before it
        self.census = census
        self._threshold = figure + max(int(figure * self.GROWTH), self.FLOOR)
