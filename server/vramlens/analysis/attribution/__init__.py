"""Stage 4, attribution: which lines (and library frames) the live bytes belong to, and where the failing request was made."""
