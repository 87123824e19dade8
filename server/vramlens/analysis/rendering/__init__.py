"""Stage 8, rendering: the analysis for people (text report, timeline SVG, redaction) and for programs (--json)."""
