"""Static checks on a notebook: its code cells concatenated in order (so a list filled in one cell and
appended to in a loop of the next is one flow), each finding put back on its own cell and line.

IPython's own syntax is not Python: a ``%magic`` or ``!shell`` line becomes a blank line (line
numbers stay), and a cell whose first line is a cell magic is left out, unless that magic runs the
body as Python (``%%vramlens``, ``%%time``…). Pure (no pygls).
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass

from vramlens.lint import Finding, lint_source
from vramlens.lint.engine.notebooks import python_lines as cell_python_lines
PARSE_ERROR_CODE = "VL000"
MAX_CELL_CHARS = 1 << 20  # a cell longer than this (generated data, a pasted dump) is not checked: its lines stay blank


@dataclass(frozen=True)
class CellSpan:
    key: str  # the cell document's URI
    first: int  # 1-based line of the cell's first line in the concatenated text
    count: int  # its lines


def python_lines(source: str) -> list[str]:
    """A cell's lines as Python (magics and shell lines blanked, lint/notebooks.py); an over-long cell's blank."""
    if len(source) > MAX_CELL_CHARS:
        return [""] * (source.count("\n") + 1)
    return cell_python_lines(source)


def concatenate(cells: list[tuple[str, str]]) -> tuple[str, list[CellSpan]]:
    """(uri, source) of each code cell -> one text and where each cell lies in it."""
    text_lines: list[str] = []
    spans = []
    for key, source in cells:
        lines = python_lines(source)
        spans.append(CellSpan(key, len(text_lines) + 1, len(lines)))
        text_lines += lines
    return "\n".join(text_lines) + "\n", spans


def _shift(finding: Finding, offset: int) -> Finding:
    fixes = tuple(dataclasses.replace(fix, edits=tuple(dataclasses.replace(edit, line=edit.line - offset,
                                                                          end_line=edit.end_line - offset)
                                                       for edit in fix.edits)) for fix in finding.fixes)
    return dataclasses.replace(finding, line=finding.line - offset, end_line=finding.end_line - offset, fixes=fixes)


def _inside(span: CellSpan, line: int) -> bool:
    return span.first <= line < span.first + span.count


def lint_cells(cells: list[tuple[str, str]], path: str, select=None, ignore=None, preview: bool = False,
               cache=None, root=None) -> dict[str, list[Finding]]:
    """Findings per cell URI, lines counted within the cell. A finding or fix that reaches into another
    cell keeps only what lies in its own cell (a fix that would edit two cells is dropped). ``cache``:
    the engine's cache of this notebook's last lint (only changed parts are analysed again)."""
    text, spans = concatenate(cells)
    findings = lint_source(text, path, select, ignore, preview, cache=cache, root=root)
    if any(finding.code == PARSE_ERROR_CODE or finding.rule == "syntax" for finding in findings):
        # One cell that does not parse must not silence the others: each is then checked alone.
        return {key: lint_source("\n".join(python_lines(source)) + "\n", path, select, ignore, preview, root=root)
                for key, source in cells}
    by_cell: dict[str, list[Finding]] = {span.key: [] for span in spans}
    firsts = [span.first for span in spans]
    for finding in findings:
        position = bisect.bisect_right(firsts, finding.line) - 1  # the cell holding the line, found in log(cells)
        span = spans[position] if position >= 0 else None
        if span is None or not _inside(span, finding.line):
            continue
        offset = span.first - 1
        end_line = min(finding.end_line, span.first + span.count - 1)
        end_column = finding.end_column if end_line == finding.end_line else 0
        fixes = tuple(fix for fix in finding.fixes if all(_inside(span, e.line) and _inside(span, e.end_line) for e in fix.edits))
        kept = dataclasses.replace(finding, end_line=end_line, end_column=end_column, fixes=fixes)
        by_cell[span.key].append(_shift(kept, offset))
    return by_cell
