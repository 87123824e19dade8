"""Running the engine the way the corpora score it: every rule on, preview ones included, and which codes the
engine turns on by default (a check marked ``preview=True`` in the catalog is off until selected)."""

from __future__ import annotations

import inspect

from vramlens.lint import CHECKS, Finding, lint_source

PARSE_ERROR = "VL000"


def all_codes() -> list[str]:
    return [c.code for c in CHECKS if c.code != PARSE_ERROR]


def default_on_codes() -> frozenset[str]:
    return frozenset(c.code for c in CHECKS if c.code != PARSE_ERROR and not getattr(c, "preview", False))


_EXTRA = {"preview": True} if "preview" in inspect.signature(lint_source).parameters else {}


def lint_text(text: str, path: str) -> list[Finding]:
    return lint_source(text, path, select=all_codes(), **_EXTRA)
