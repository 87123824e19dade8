"""Applying fixes: the same exact edits the editor's quick fixes use, checked to still parse."""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass
from pathlib import Path

from ..findings import Edit, Finding, Fix
from ..parse.source import decode_source, read_source
from .driver import lint_source, parse
from vramlens.regular_files import FileProblem

MAX_ROUNDS = 10  # a fix can reveal another (an outer loop once the inner store is fixed)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    position = text.find("\n")
    while position >= 0:
        starts.append(position + 1)
        position = text.find("\n", position + 1)
    return starts


def apply_edits(text: str, edits: tuple[Edit, ...] | list[Edit]) -> str:
    """Apply non-overlapping edits (1-based lines, 0-based character columns) in one pass over ``text``.

    Insertions at the same position keep their listed order in the result.
    """
    starts = _line_starts(text)

    def offset(line: int, column: int) -> int:
        if line - 1 >= len(starts):
            return len(text)
        return min(starts[max(line, 1) - 1] + column, len(text))

    spans = sorted((offset(e.line, e.column), offset(e.end_line, e.end_column), index, e.new_text)
                   for index, e in enumerate(edits))
    pieces, cursor = [], 0
    for start, end, _, new_text in spans:
        if start < cursor:
            raise ValueError("overlapping edits")
        pieces += (text[cursor:start], new_text)
        cursor = max(end, start)
    pieces.append(text[cursor:])
    return "".join(pieces)


_UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


def apply_fix(text: str, fix: Fix) -> str | None:
    """The text with ``fix`` applied, or None when the result would not parse."""
    try:
        fixed = apply_edits(text, fix.edits)
        parse(fixed)
    except _UNPARSABLE:
        return None
    return fixed


@dataclass
class FixResult:
    text: str
    applied: int
    remaining: list[Finding]


def fix_source(text: str, path: str = "<source>", select: list[str] | None = None, ignore: list[str] | None = None,
               preview: bool = False, root: str | os.PathLike | None = None) -> FixResult:
    """Apply the first (default) fix of every finding until nothing fixable is left.

    Fixes of one round are applied together when their edits do not overlap; when the result would
    not parse, the fixes that do parse together are found by halving (a few parses, not one per fix),
    and the others are skipped, their findings kept. Each round costs a few passes over the text and one lint;
    the lint of the last text is ``remaining``, so a file with nothing to fix is linted once.
    """
    findings = lint_source(text, path, select, ignore, preview, root=root)
    applied = 0
    for _ in range(MAX_ROUNDS):
        chosen = _compatible_fixes(findings)
        if not chosen:
            break
        fixed, used = _apply_what_parses(text, chosen)
        if not used:
            break
        text, applied = fixed, applied + used
        findings = lint_source(text, path, select, ignore, preview, root=root)  # what remains, and the next round's fixes
    return FixResult(text, applied, findings)


def _apply_what_parses(text: str, fixes: list[Fix]) -> tuple[str, int]:
    """``text`` with as many of ``fixes`` applied as still parse together, and how many that was."""
    kept: list[Fix] = []
    result = text

    def attempt(group: list[Fix]) -> None:
        nonlocal result
        candidate = apply_fix(text, Fix("combined", tuple(e for fix in kept + group for e in fix.edits)))
        if candidate is not None:
            kept.extend(group)
            result = candidate
        elif len(group) > 1:
            middle = len(group) // 2
            attempt(group[:middle])
            attempt(group[middle:])

    attempt(fixes)
    return result, len(kept)


def _compatible_fixes(findings: list[Finding]) -> list[Fix]:
    """The default fix of each finding, in order, skipping any whose edits touch or overlap one already chosen."""
    taken: list[tuple[int, int, int, int]] = []  # spans of the chosen fixes, sorted, none overlapping
    chosen: list[Fix] = []
    for finding in findings:
        if not finding.fixes:
            continue
        fix = finding.fixes[0]
        spans = [(e.line, e.column, e.end_line, e.end_column) for e in fix.edits]
        if any(_collides(span, taken) for span in spans) or any(
                _overlaps(a, b) for i, a in enumerate(spans) for b in spans[i + 1:]):
            continue
        for span in spans:
            bisect.insort(taken, span)
        chosen.append(fix)
    return chosen


def _collides(span: tuple[int, int, int, int], taken: list[tuple[int, int, int, int]]) -> bool:
    """Whether ``span`` overlaps a span of ``taken`` (sorted, disjoint): only its neighbours can."""
    index = bisect.bisect_left(taken, span)
    return any(_overlaps(span, taken[i]) for i in (index - 1, index) if 0 <= i < len(taken))


def _overlaps(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    # Touching insertion points on the same line (e.g. two imports) are kept apart too.
    return not ((a[2], a[3]) < (b[0], b[1]) or (b[2], b[3]) < (a[0], a[1]))


def fix_file(path: str | Path, select: list[str] | None = None, ignore: list[str] | None = None,
             preview: bool = False, root: str | os.PathLike | None = None) -> FixResult | None:
    """Fix a file in place, keeping its encoding and BOM. None when it cannot be fixed safely (a notebook is
    never rewritten: its findings are reported, their fixes are for the editor's cells)."""
    path = Path(path)
    if path.suffix == ".ipynb":
        return None
    try:
        decoded = decode_source(read_source(path))
    except FileProblem:
        return None  # lint_file reports why it cannot be read
    if decoded.problem:
        return None  # rewriting would destroy the undecodable bytes
    result = fix_source(decoded.text, str(path), select, ignore, preview, root)
    if result.applied and result.text != decoded.text:
        try:
            data = decoded.encode(result.text)
        except UnicodeEncodeError:
            return None
        path.write_bytes(data)
    return result
