"""What a capture says about a file beyond per-line figures: the line whose allocation failed
(with the accounting), the function that holds the most live bytes, and the measured growth
that backs a static `retained-graph` finding. Pure (no pygls)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from vramlens.analysis.load.ending import moment_short
from vramlens.analysis.model import Analysis, LineStat
from vramlens.lint.parse.source import SOURCE_LIMIT
from vramlens.regular_files import FileProblem, read_text_file
from vramlens.analysis.rendering.verdict_view import cause_text
from vramlens.units import format_bytes as fmt

@dataclass(frozen=True)
class OomLine:
    local_path: str
    line: int  # 1-based
    message: str


@dataclass(frozen=True)
class PeakFunction:
    local_path: str
    def_line: int  # 1-based line of `def`
    title: str


def _local_paths(analysis: Analysis) -> dict[str, str]:
    return {line.path: line.local_path for line in analysis.lines if line.path and line.local_path}


def oom_line(analysis: Analysis, cell_key=None) -> OomLine | None:
    """The user line whose allocation failed, with the accounting at that moment. A line of a notebook
    cell is placed by ``cell_key(notebook file, cell place)``."""
    site = analysis.oom.site if analysis.oom else None
    local = _local_paths(analysis).get(site.path) if site else None
    facts = analysis.notebook
    ref = facts.ref(site.path) if site and facts is not None else None
    if ref is not None and cell_key is not None and ref.notebook and ref.index is not None:
        local = cell_key(ref.notebook, ref.index)
    if site is None or local is None or not site.line:
        return None
    request = fmt(analysis.oom.request) if analysis.oom.request else "an unknown size"
    if site.autograd:
        what = f"CUDA out of memory: the autograd engine's {request} request failed during the work started here"
    else:
        what = f"CUDA out of memory: a {request} request failed here"
    diagnosis = analysis.diagnosis
    cause = cause_text(diagnosis.cause)
    # Short: it leads every hover on the line. The full accounting is in the report.
    message = (f"{what}, {short_accounting(analysis)}. "
               f"{cause[:1].upper()}{cause[1:]} ({diagnosis.cause}, {diagnosis.confidence_label} confidence).")
    return OomLine(local, site.line, message)


def short_accounting(analysis: Analysis) -> str:
    """`with 2.95 GiB allocated and 2.96 GiB reserved under the 3.00 GiB cap`."""
    acc = analysis.accounting
    text = f"with {fmt(acc.allocated)} allocated and {fmt(acc.reserved)} reserved"
    if acc.limit:
        text += f" under the {fmt(acc.limit)} {'cap' if acc.limit_is_cap else 'limit'}"
    if acc.non_pytorch:
        text += f" ({fmt(acc.non_pytorch)} more outside PyTorch)"
    return text


def _def_line(local_path: str, function: str, lines: set[int]) -> int | None:
    try:
        tree = ast.parse(read_text_file(local_path, SOURCE_LIMIT, "source file"))
    except (FileProblem, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            if any(node.lineno <= line <= (node.end_lineno or node.lineno) for line in lines):
                if best is None or node.lineno > best:  # the innermost definition holding them
                    best = node.lineno
    return best


def peak_function(analysis: Analysis) -> PeakFunction | None:
    """The user function whose lines hold the most live bytes at the OOM (or the peak)."""
    totals: dict[tuple[str, str], list[LineStat]] = {}
    for stat in analysis.lines:
        if stat.local_path and stat.line and stat.live_bytes > 0 and not stat.function.startswith("<"):
            totals.setdefault((stat.local_path, stat.function), []).append(stat)
    if not totals:
        return None
    (local, function), stats = max(totals.items(), key=lambda item: sum(s.live_bytes for s in item[1]))
    line = _def_line(local, function, {s.line for s in stats})
    if line is None:
        return None
    live = sum(s.live_bytes for s in stats)
    share = sum(s.share for s in stats)
    title = f"▲ {fmt(live)} live {moment_short(analysis.accounting.moment)} ({share:.0%}) — show memory report"
    return PeakFunction(local, line, title)


def enclosing_loop(source: str, line: int) -> tuple[int, int] | None:
    """The 1-based line span of the innermost for/while loop holding ``line``."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            end = node.end_lineno or node.lineno
            if node.lineno <= line <= end and (best is None or node.lineno >= best[0]):
                best = (node.lineno, end)
    return best


def measured_growth(line: int, span: tuple[int, int] | None, growing: dict[int, tuple[int, int]]) -> str | None:
    """A sentence for a static finding at ``line``: what the capture measured on it, or on the lines of
    its loop (``span``). ``growing``: 1-based line -> (growth bytes, live bytes) of lines measured to grow."""
    if line in growing:
        growth, live = growing[line]
        return f"Measured: this line grew by {fmt(growth)} across the run ({fmt(live)} live)."
    if span is None:
        return None
    inside = sorted(number for number in growing if span[0] <= number <= span[1])
    if not inside:
        return None
    growth = sum(growing[number][0] for number in inside)
    live = sum(growing[number][1] for number in inside)
    where = ", ".join(str(number) for number in inside)
    return (f"Measured: line{'s' if len(inside) > 1 else ''} {where} of this loop grew by {fmt(growth)} "
            f"across the run ({fmt(live)} live).")
