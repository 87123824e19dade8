"""How the editor words an analysis' identifiers for people: the words live in analysis/rendering/."""

from __future__ import annotations

from vramlens.analysis.rendering.verdict_view import CAUSE_TEXT, cause_text

__all__ = ["CAUSE_TEXT", "cause_text"]
