"""The side-by-side view labels a `vramlens diff --json` object; the view formats nothing itself."""

from __future__ import annotations

from vramlens.analysis.rendering.diff_view import change_text, diff_view

MIB = 2**20

# The documented shape (format "vramlens-diff", version 1), two fields of each kind: a renderer test.
DIFF = {"format": "vramlens-diff", "version": 1,
        "before": {"outcome": "oom", "cause": "retained_references", "peak_allocated": 3000 * MIB, "peak_reserved": 3100 * MIB,
                   "peak_driver": None, "steps": 4, "completed": 3, "growth": 250 * MIB},
        "after": {"outcome": "completed", "cause": "no_problem", "peak_allocated": 400 * MIB, "peak_reserved": 512 * MIB,
                  "peak_driver": None, "steps": 8, "completed": 8, "growth": 0},
        "sentence": "The change removed the growth.",
        "lines": [{"label": "keep.py:28", "path": "/w/keep.py", "line": 28, "source": "self.kept.append(x)",
                   "before": 2900 * MIB, "after": 0, "change": -2900 * MIB, "growth_before": 250 * MIB, "growth_after": 0}],
        "holders": [], "notes": ["a note"]}


def test_rows_carry_both_runs_and_the_change_as_text():
    view = diff_view(DIFF)
    rows = {row[0]: row[1:] for row in view["rows"]}
    assert rows["outcome"] == ["oom after 3 of 4 steps", "completed after 8 of 8 steps", ""]
    assert rows["cause"][:2] == ["tensors from earlier iterations stay referenced", "nothing to fix"]
    assert rows["peak allocated"] == ["2.93 GiB", "400.00 MiB", "−2.54 GiB"]
    assert rows["peak driver-visible"] == ["unknown", "unknown", ""]  # never a made-up change
    assert view["lines"][0] == {"label": "keep.py:28", "before": "2.83 GiB", "after": "0 B", "change": "−2.83 GiB",
                                "growth": "growth 250.00 MiB → 0 B", "source": "self.kept.append(x)"}
    assert view["notes"] == ["a note"] and view["holders"] == []


def test_change_text():
    assert change_text(1, 1) == "same" and change_text(None, 5) == "" and change_text(MIB, 3 * MIB) == "+2.00 MiB"
