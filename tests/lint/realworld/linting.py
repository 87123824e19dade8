"""Running the engine the way the corpora score it: every rule on, preview ones included, and which codes the
engine turns on by default (a check marked ``preview=True`` in the catalog is off until selected)."""

from __future__ import annotations

import ast
import hashlib
import inspect
import warnings

from vramlens.lint import CHECKS, Finding, lint_source

PARSE_ERROR = "VL000"


def all_codes() -> list[str]:
    return [c.code for c in CHECKS if c.code != PARSE_ERROR]


def default_on_codes() -> frozenset[str]:
    return frozenset(c.code for c in CHECKS if c.code != PARSE_ERROR and not getattr(c, "preview", False))


_EXTRA = {"preview": True} if "preview" in inspect.signature(lint_source).parameters else {}


# Findings by (path, sha256 of the text): the scores, the quality gate and the held-out gate all read the same
# corpus files, and each file is linted once per process however many of them ask.
_LINTED: dict[tuple[str, str], tuple[Finding, ...]] = {}


def lint_text(text: str, path: str) -> list[Finding]:
    key = (path, hashlib.sha256(text.encode("utf-8", errors="surrogateescape")).hexdigest())
    if key not in _LINTED:
        with warnings.catch_warnings():  # third-party code's own syntax warnings (invalid escapes...) are not ours
            warnings.simplefilter("ignore")
            _LINTED[key] = tuple(lint_source(text, path, select=all_codes(), **_EXTRA))
    return list(_LINTED[key])


def parse(text: str) -> ast.Module:
    """ast.parse without the third-party file's own syntax warnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)
