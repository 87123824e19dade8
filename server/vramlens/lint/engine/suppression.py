"""Line-level suppression, as ruff's ``# noqa``: ``# vramlens: ignore[VL102]`` (or ``ignore[VL102, VL105]``, or a
bare ``# vramlens: ignore`` for every code) on a line of the finding's statement silences it there.

Parse errors (VL000) cannot be silenced: nothing else of the file was checked.
"""

from __future__ import annotations

import re

from ..findings import Edit, Finding

_MARK = "vramlens:"
_IGNORE = re.compile(r"#\s*vramlens:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
_ALL = frozenset({"*"})
_UNSILENCEABLE = "VL000"


def ignored_codes(line: str) -> frozenset[str]:
    """The codes a line's ``# vramlens: ignore[...]`` comment names (``{"*"}`` for a bare one)."""
    if _MARK not in line.lower():
        return frozenset()
    found: set[str] = set()
    for match in _IGNORE.finditer(line):
        codes = match.group("codes")
        if codes is None:
            return _ALL
        found.update(code.strip().upper() for code in codes.split(",") if code.strip())
    return frozenset(found)


def drop_suppressed(findings: list[Finding], text: str) -> list[Finding]:
    """``findings`` less those silenced on one of their lines."""
    if not findings or _MARK not in text.lower():
        return findings
    lines = text.splitlines()

    def silenced(finding: Finding) -> bool:
        if finding.code == _UNSILENCEABLE:
            return False
        for number in range(finding.line, min(finding.end_line, finding.line + 50) + 1):
            codes = ignored_codes(lines[number - 1]) if 0 < number <= len(lines) else frozenset()
            if codes is _ALL or "*" in codes or finding.code in codes:
                return True
        return False

    return [f for f in findings if not silenced(f)]


def suppression_edit(line_text: str, line: int, code: str) -> Edit:
    """The edit that silences ``code`` on ``line``: a new comment, or the code added to the line's own one."""
    match = _IGNORE.search(line_text)
    if match and match.group("codes") is not None:
        codes = [c.strip() for c in match.group("codes").split(",") if c.strip()]
        if code not in codes:
            codes.append(code)
        start, end = match.span("codes")
        return Edit(line, start, line, end, ", ".join(codes))
    end = len(line_text.rstrip())
    return Edit(line, end, line, len(line_text), f"  # vramlens: ignore[{code}]")
