"""The census' time budget, and what it says about anything it had to leave out."""

from __future__ import annotations

import time

# The scan of every object is the census itself: it goes on past the budget, up to this
# many budgets, so a huge process still gets its tensors listed; the optional searches stop at 1.
SCAN_LIMIT = 3.0


class Budget:
    def __init__(self, seconds: float):
        self.seconds = max(0.0, float(seconds))
        self.started = time.perf_counter()
        self.skipped: list[str] = []  # one sentence per thing left out; empty means complete
        self.notes: list[str] = []  # remarks that do not make the census incomplete

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def left(self) -> float:
        return self.seconds - self.elapsed()

    def spent(self) -> bool:
        return self.left() <= 0

    def scan_spent(self) -> bool:
        return self.elapsed() > self.seconds * SCAN_LIMIT

    def skip(self, sentence: str) -> None:
        self.skipped.append(sentence)

    def note(self, sentence: str) -> None:
        self.notes.append(sentence)

    @property
    def complete(self) -> bool:
        return not self.skipped
