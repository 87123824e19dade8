"""The line that keeps the memory (analysis/attribution/storing.py), the line to change, in the words every
renderer uses: the CLI's verdict and its section, the Markdown report, the editor's hint, hover and lens.
Names from the capture go through ``name`` and places through ``place``, so each renderer adds only its own
markup (Markdown's code spans) and the sentence stays the same."""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.analysis.model import Analysis, StoringLine
from vramlens.analysis.rendering.line_view import GROWING_MARK
from vramlens.units import format_bytes as fmt


def _plain(text: str) -> str:
    return text


@dataclass(frozen=True)
class StoringView:
    kept: int  # what it keeps: the holder's bytes, or all its own line made when it allocates and stores
    share: float  # of the live memory
    figure: str  # "keeps 2.66 GiB · 90% ↑"
    words: str  # "keeps 2.66 GiB alive in outputs, 2.66 GiB of it from earlier steps"
    second_hop: str | None  # "what it keeps was allocated at retained_references.py:20" (when elsewhere)
    kept_by: str  # the allocating line's note: "allocated here, kept by outputs at line 21"


def kept_bytes(storing: StoringLine, analysis: Analysis) -> int:
    own = next((line for line in analysis.lines if (line.path, line.line) == (storing.path, storing.line)), None)
    return max(storing.bytes, own.live_bytes if own else 0)


def live_total(analysis: Analysis) -> int:
    return max(analysis.accounting.allocated or sum(line.live_bytes for line in analysis.lines), 1)


def storing_view(storing: StoringLine, analysis: Analysis, place, name=_plain) -> StoringView:
    """``place(path, line)`` names a recorded line; ``name(text)`` a name from the capture (a holder)."""
    kept = kept_bytes(storing, analysis)
    share = min(kept / live_total(analysis), 1.0)
    grown = f", {fmt(storing.growth_bytes)} of it from earlier steps" if storing.growth_bytes else ""
    elsewhere = storing.allocated_at and tuple(storing.allocated_at) != (storing.path, storing.line)
    return StoringView(
        kept=kept, share=share,
        figure=f"keeps {fmt(kept)} · {share:.0%}" + (f" {GROWING_MARK}" if storing.growth_bytes else ""),
        words=f"keeps {fmt(kept)} alive in {name(storing.holder)}{grown}",
        second_hop=f"what it keeps was allocated at {place(*storing.allocated_at)}" if elsewhere else None,
        kept_by=f"allocated here, kept by {name(storing.target)} at line {storing.line}")


def kept_figure(live_bytes: int, kept: int, target: str) -> str:
    """The hint of a line whose bytes a storing line keeps: `2.63 GiB · 2.39 GiB kept by outputs` (named, not
    numbered: a line number would go wrong as edits move the lines)."""
    return f"{fmt(live_bytes)} · {fmt(min(kept, live_bytes))} kept by {target}"
