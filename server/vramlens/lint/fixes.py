"""Applying fixes: the same exact edits the editor's quick fixes use, checked to still parse."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .engine import lint_source, parse
from .findings import Edit, Finding, Fix
from .source import decode_source

MAX_ROUNDS = 10  # a fix can reveal another (an outer loop once the inner store is fixed)


def _offsets(text: str) -> list[int]:
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def apply_edits(text: str, edits: tuple[Edit, ...] | list[Edit]) -> str:
    """Apply non-overlapping edits (1-based lines, 0-based character columns) in one pass.

    Insertions at the same position keep their listed order in the result.
    """
    starts = _offsets(text)

    def offset(line: int, column: int) -> int:
        if line - 1 >= len(starts):
            return len(text)
        return min(starts[line - 1] + column, len(text))

    spans = sorted(
        ((offset(e.line, e.column), offset(e.end_line, e.end_column), index, e.new_text) for index, e in enumerate(edits)),
        reverse=True,
    )
    previous_start = len(text) + 1
    for start, end, _, new_text in spans:
        if end > previous_start:
            raise ValueError("overlapping edits")
        text = text[:start] + new_text + text[end:]
        previous_start = start
    return text


def apply_fix(text: str, fix: Fix) -> str | None:
    """The text with ``fix`` applied, or None when the result would not parse."""
    try:
        fixed = apply_edits(text, fix.edits)
        parse(fixed)
    except (SyntaxError, ValueError):
        return None
    return fixed


@dataclass
class FixResult:
    text: str
    applied: int
    remaining: list[Finding]


def fix_source(text: str, path: str = "<source>", select: list[str] | None = None, ignore: list[str] | None = None,
               preview: bool = False) -> FixResult:
    """Apply the first (default) fix of every finding until nothing fixable is left.

    Fixes of one round are applied together when their edits do not overlap; a fix whose
    result would not parse is skipped and its finding stays.
    """
    applied = 0
    for _ in range(MAX_ROUNDS):
        chosen = _compatible_fixes(text, lint_source(text, path, select, ignore, preview))
        if not chosen:
            break
        combined = apply_fix(text, Fix("combined", tuple(e for fix in chosen for e in fix.edits)))
        if combined is None:  # each parses alone but not together: take the first one this round
            chosen = chosen[:1]
            combined = apply_fix(text, chosen[0])
        text = combined
        applied += len(chosen)
    return FixResult(text, applied, lint_source(text, path, select, ignore, preview))


def _compatible_fixes(text: str, findings: list[Finding]) -> list[Fix]:
    """The default fix of each finding, skipping any that would not parse or that overlaps one already chosen."""
    taken: list[tuple[int, int, int, int]] = []
    chosen: list[Fix] = []
    for finding in findings:
        if not finding.fixes:
            continue
        fix = finding.fixes[0]
        spans = [(e.line, e.column, e.end_line, e.end_column) for e in fix.edits]
        if any(_overlaps(span, other) for span in spans for other in taken) or apply_fix(text, fix) is None:
            continue
        taken.extend(spans)
        chosen.append(fix)
    return chosen


def _overlaps(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    # Touching insertion points on the same line (e.g. two imports) are kept apart too.
    return not ((a[2], a[3]) < (b[0], b[1]) or (b[2], b[3]) < (a[0], a[1]))


def fix_file(path: str | Path, select: list[str] | None = None, ignore: list[str] | None = None,
             preview: bool = False) -> FixResult | None:
    """Fix a file in place, keeping its encoding and BOM. None when it cannot be fixed safely."""
    path = Path(path)
    decoded = decode_source(path.read_bytes())
    if decoded.problem:
        return None  # rewriting would destroy the undecodable bytes
    result = fix_source(decoded.text, str(path), select, ignore, preview)
    if result.applied and result.text != decoded.text:
        try:
            data = decoded.encode(result.text)
        except UnicodeEncodeError:
            return None
        path.write_bytes(data)
    return result
