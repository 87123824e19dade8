"""Notebooks (``.ipynb``) for ``vramlens lint``: the code cells concatenated in order, so that a list filled in
one cell and appended to in a loop of the next is one flow, and each finding put back on its cell and line.

IPython's own syntax is not Python: a ``%magic`` or ``!shell`` line becomes a blank line (line numbers stay),
and a cell whose first line is a cell magic is left out unless that magic runs the body as Python
(``%%time``...). Cells are numbered from 1 over all the notebook's cells, markdown ones included, as they are
listed in the file; a cell whose source is not text is skipped and said so.
"""

from __future__ import annotations

import dataclasses
import json
import os

from vramlens.regular_files import read_regular_file

from ..findings import Finding
from ..parse.source import parse_error, too_large

NOTEBOOK_SUFFIX = ".ipynb"
NOTEBOOK_LIMIT = 64 << 20  # a notebook's outputs (images) may be large; its code is bounded like a file's
PYTHON_BODY_MAGICS = ("%%vramlens", "%%time", "%%timeit", "%%capture", "%%prun")


def python_lines(source: str) -> list[str]:
    lines = source.replace("\r\n", "\n").split("\n")
    first = next((line.strip() for line in lines if line.strip()), "")
    if first.startswith("%%") and first.split()[0] not in PYTHON_BODY_MAGICS:
        return [""] * len(lines)
    return ["" if line.lstrip().startswith(("%", "!")) else line for line in lines]


def code_cells(data: bytes) -> tuple[list[tuple[int, str]], str | None]:
    """(cell number, source) of each code cell, and a problem to report, if any. Raises ValueError with one
    sentence when the file is not a notebook."""
    try:
        document = json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as error:
        raise ValueError(f"this notebook is not valid JSON ({str(error)[:120]}); nothing was checked.") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise ValueError("this file has no notebook cells (no \"cells\" list); nothing was checked.")
    found, skipped = [], []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            source = "".join(source)
        if not isinstance(source, str):
            skipped.append(number)
            continue
        found.append((number, source))
    problem = None
    if skipped:
        listed = ", ".join(str(n) for n in skipped[:10]) + (" ..." if len(skipped) > 10 else "")
        problem = f"the source of cell {listed} is not text; {'it was' if len(skipped) == 1 else 'they were'} not checked."
    return found, problem


def lint_notebook_bytes(data: bytes, path: str, lint_source, select=None, ignore=None, preview: bool = False) -> list[Finding]:
    """Findings of a notebook, each with its ``cell`` and its line within the cell."""
    try:
        cells, problem = code_cells(data)
    except ValueError as error:
        return [parse_error(path, str(error))]
    lines: list[str] = []
    starts: list[tuple[int, int, int]] = []  # (first line in the joined text, line count, cell number)
    for number, source in cells:
        cell_lines = python_lines(source)
        starts.append((len(lines) + 1, len(cell_lines), number))
        lines += cell_lines
    text = "\n".join(lines) + "\n"
    large = too_large(len(text))
    if large:
        return [parse_error(path, large)]
    findings = lint_source(text, path, select, ignore, preview)
    if any(f.code == "VL000" for f in findings):
        # A cell that does not parse must not silence the others: it is reported on its own and left out
        # (its lines blanked, so line numbers stay), and the other cells are checked together.
        broken = []
        for first, count, number in starts:
            alone = "\n".join(lines[first - 1:first - 1 + count]) + "\n"
            errors = [f for f in lint_source(alone, path, ["VL000"]) if f.code == "VL000"]
            if errors:
                broken.append((first, count, number, errors))
        for first, count, _, _ in broken:
            lines[first - 1:first - 1 + count] = [""] * count
        findings = [_placed(f, starts) for f in lint_source("\n".join(lines) + "\n", path, select, ignore, preview)]
        findings += [_in_cell(f, 0, number) for _, _, number, errors in broken for f in errors]
    else:
        findings = [_placed(f, starts) for f in findings]
    if problem:
        findings.insert(0, dataclasses.replace(parse_error(path, problem), severity="info", code="VL000"))
    return findings


def _placed(finding: Finding, starts: list[tuple[int, int, int]]) -> Finding:
    for first, count, number in starts:
        if first <= finding.line < first + count:
            return _in_cell(finding, first - 1, number, last=count)
    return finding


def _in_cell(finding: Finding, offset: int, cell: int, last: int | None = None) -> Finding:
    """The finding with lines counted within its cell. Notebooks are not rewritten, so its fixes are dropped."""
    end_line = finding.end_line - offset
    end_column = finding.end_column
    if last is not None and end_line > last:
        end_line, end_column = last, 0
    return dataclasses.replace(finding, line=finding.line - offset, end_line=end_line, end_column=end_column,
                               cell=cell, fixes=())


def read_notebook(path: str | os.PathLike) -> bytes:
    """The notebook's bytes (a regular file of at most NOTEBOOK_LIMIT); FileProblem otherwise."""
    return read_regular_file(path, NOTEBOOK_LIMIT, "notebook for lint")


__all__ = ["NOTEBOOK_SUFFIX", "code_cells", "lint_notebook_bytes", "python_lines", "read_notebook"]
