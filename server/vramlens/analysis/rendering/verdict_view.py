"""The answer in four rows, whoever draws it (the CLI's first screen, the report view's heading):
the cause, the line to change, the first fix, and when the runner-up is close, the run that decides."""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.analysis.model import Analysis, LineStat, Recommendation, StoringLine
from vramlens.analysis.rendering.accounting_view import limit_words
from vramlens.analysis.rendering.storing_view import storing_view
from vramlens.analysis.rendering.line_view import LineView, line_view, recorded_place
from vramlens.units import format_bytes as fmt

# The cause as a reader says it (the names are the analysis' identifiers, docs/analysis-json.md).
CAUSE_TEXT = {
    "working_set": "the live working set is too large",
    "retained_references": "tensors from earlier iterations stay referenced",
    "fragmentation": "the reserved memory is fragmented",
    "outside_allocator": "memory outside PyTorch's allocator left too little",
    "cached_not_leak": "reserved memory is PyTorch's cache, not a leak",
    "no_problem": "nothing to fix",
}
NOTHING_TO_CHANGE = ("no_problem", "cached_not_leak", "outside_allocator")


def cause_text(cause: str) -> str:
    return CAUSE_TEXT.get(cause, cause.replace("_", " "))


@dataclass(frozen=True)
class VerdictView:
    cause: str  # "tensors from earlier iterations stay referenced"
    confidence: str  # "confidence 0.75, high"; "confirmed by measurement: …" when measured
    alternative: str | None  # "could also be: the live working set is too large" (a close runner-up only)
    decide: str | None  # the command that decides between the two, when the runner-up is close
    line: LineView | None  # the line to change
    source: str | None  # its text
    fix: Recommendation | None  # the first thing to try that changes something
    memory: str  # "3.09 GiB allocated · 3.29 GiB reserved · 4.62 GiB driver-visible · limit 3.32 GiB"


def line_to_change(analysis: Analysis) -> LineStat | None:
    """The line the first fix points at, else the user line holding most live bytes (None when the
    cause is not in the user's lines)."""
    if analysis.diagnosis.cause in NOTHING_TO_CHANGE:
        return None
    users = [line for line in analysis.lines if line.path is not None and line.live_bytes > 0]
    for rec in analysis.recommendations:
        for action in rec.actions:
            if action.kind == "open_line":
                target = (action.arguments.get("path"), action.arguments.get("line"))
                found = next((line for line in users if (line.path, line.line) == target), None)
                if found is not None:
                    return found
    return users[0] if users else None


def first_fix(analysis: Analysis) -> Recommendation | None:
    """The first recommendation that is a change to make, not the measurement that decides."""
    return next((rec for rec in analysis.recommendations if not any(a.kind == "confirm" for a in rec.actions)),
                None)


def memory_summary(analysis: Analysis) -> str:
    acc = analysis.accounting
    parts = [f"{fmt(acc.allocated)} allocated", f"{fmt(acc.reserved)} reserved"]
    if acc.driver_used is not None:
        parts.append(f"{fmt(acc.driver_used)} driver-visible")
    if acc.limit is not None:
        parts.append(limit_words(acc))
    return " · ".join(parts)


def storing_line_view(storing: StoringLine, analysis: Analysis) -> LineView:
    """The line that keeps the memory as a line to change: it allocates nothing itself, so its figure is
    what it keeps, not what it allocated."""
    own = next((line for line in analysis.lines if (line.path, line.line) == (storing.path, storing.line)), None)
    view = storing_view(storing, analysis, recorded_place(analysis))
    return LineView(
        place=storing.label, function=own.function if own else "", live=True, figure=view.figure,
        figure_words=view.words, headline=view.words, blocks="",
        held_by=f"stores into {storing.target}" + (f"; {view.second_hop}" if view.second_hop else ""),
        path=(), path_title="")


def verdict_view(analysis: Analysis) -> VerdictView:
    diagnosis = analysis.diagnosis
    close = bool(diagnosis.alternative)
    storing = analysis.storing[0] if analysis.storing and diagnosis.cause not in NOTHING_TO_CHANGE else None
    line = None if storing is not None else line_to_change(analysis)
    if storing is not None:
        view = storing_line_view(storing, analysis)
    else:
        view = line_view(line, analysis.accounting.moment, analysis.holders, recorded_place(analysis)) if line else None
    return VerdictView(
        cause=cause_text(diagnosis.cause),
        confidence=diagnosis.measured or f"confidence {diagnosis.confidence:.2f}, {diagnosis.confidence_label}",
        alternative=f"could also be: {cause_text(diagnosis.alternative)}" if close else None,
        decide=diagnosis.confirm.command if close and diagnosis.confirm is not None else None,
        line=view, source=storing.source if storing is not None else line.source if line else None, fix=first_fix(analysis), memory=memory_summary(analysis),
    )


def verdict_json(view: VerdictView) -> dict:
    """The view as the report view receives it (labels only)."""
    line = view.line
    return {"cause": view.cause, "confidence": view.confidence, "alternative": view.alternative,
            "decide": view.decide, "memory": view.memory, "source": view.source,
            "line": None if line is None else {"place": line.place, "figureWords": line.figure_words,
                                               "heldBy": line.held_by},
            "fix": None if view.fix is None else {"action": view.fix.action, "reason": view.fix.reason}}
