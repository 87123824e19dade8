"""Two captures side by side (before and after a change), labelled for the report view: the rows of a
`vramlens diff --json` object (format "vramlens-diff", version 1) as text, so the view formats nothing."""

from __future__ import annotations

from vramlens.analysis.rendering.verdict_view import cause_text
from vramlens.units import format_bytes as fmt

SIDE_ROWS = (("peak allocated", "peak_allocated"), ("peak reserved", "peak_reserved"),
             ("peak driver-visible", "peak_driver"), ("growth across steps", "growth"))
SHOWN = 12


def change_text(before: int | None, after: int | None) -> str:
    if before is None or after is None:
        return ""
    if after == before:
        return "same"
    return f"{'+' if after > before else '−'}{fmt(abs(after - before))}"


def _figure(value: int | None) -> str:
    return fmt(value) if value is not None else "unknown"


def _ending(side: dict) -> str:
    steps = f" after {side['completed']} of {side['steps']} steps" if side.get("steps") else ""
    return f"{side.get('outcome') or 'unknown'}{steps}"


def _delta_rows(items: list[dict]) -> list[dict]:
    rows = []
    for item in items[:SHOWN]:
        grown = ""
        if item.get("growth_before") or item.get("growth_after"):
            grown = f"growth {_figure(item.get('growth_before'))} → {_figure(item.get('growth_after'))}"
        rows.append({"label": item.get("label") or "?", "before": _figure(item.get("before")),
                     "after": _figure(item.get("after")), "change": change_text(item.get("before"), item.get("after")),
                     "growth": grown, "source": item.get("source")})
    return rows


def diff_view(diff: dict) -> dict:
    """The report view's "Before and after" section from a diff object."""
    before, after = diff.get("before") or {}, diff.get("after") or {}
    rows = [["outcome", _ending(before), _ending(after), ""],
            ["cause", cause_text(before["cause"]) if before.get("cause") else "unknown",
             cause_text(after["cause"]) if after.get("cause") else "unknown", ""]]
    rows += [[label, _figure(before.get(key)), _figure(after.get(key)), change_text(before.get(key), after.get(key))]
             for label, key in SIDE_ROWS]
    return {"title": "Before and after", "sentence": diff.get("sentence") or "",
            "columns": ["", "before", "after", "change"], "rows": rows,
            "linesTitle": "Lines (live bytes at each run's moment)", "lines": _delta_rows(diff.get("lines") or []),
            "holdersTitle": "Holders", "holders": _delta_rows(diff.get("holders") or []),
            "notes": list(diff.get("notes") or [])}
