"""Stage 5, attribution: which lines (and library frames) the live bytes belong to, and where the failing request was made."""

from vramlens.analysis.attribution.stage import Attributed, attribute

__all__ = ["Attributed", "attribute"]
