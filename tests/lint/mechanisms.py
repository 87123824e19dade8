"""Reading the small sources of the mechanism tests: ``# flag: VL102`` ends each line that must be reported.

Every finding must be marked and every mark found, so a source checks both that a construct is caught
and that its look-alikes next to it are not.
"""

from __future__ import annotations

import re
from textwrap import dedent

from vramlens.lint import lint_source

_MARK = re.compile(r"#\s*flag:\s*(VL\d{3}(?:\s*,\s*VL\d{3})*)")


def source(text: str) -> str:
    return dedent(text).lstrip("\n")


def marked(text: str) -> set[tuple[int, str]]:
    found = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = _MARK.search(line)
        if match:
            found.update((number, code.strip()) for code in match.group(1).split(","))
    return found


def reported(text: str, **options) -> set[tuple[int, str]]:
    options.setdefault("preview", True)  # the mechanisms of preview checks are tested too
    return {(f.line, f.code) for f in lint_source(text, "case.py", **options)}


def check(text: str, **options) -> None:
    """The findings are exactly the marked lines."""
    expected, found = marked(text), reported(text, **options)
    assert found == expected, f"missing {sorted(expected - found)}, unexpected {sorted(found - expected)}"
