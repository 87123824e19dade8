"""docs/lint.md's tables, made from the catalog: ``python -m vramlens.lint.docs docs/lint.md`` rewrites them in
place, ``--check`` only says whether they are current (tests/lint/test_docs.py runs it).

Each generated part sits between two comment lines, ``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``;
the prose around them is written by hand.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from .catalog import (ALWAYS_ON, CHECKS, FRESH_JUDGMENTS, FRESH_LINES, FRESH_ROUNDS, HELD_OUT_LINES, HELD_OUT_NOTES,
                      HELD_OUT_ROUND, IN_SAMPLE_NOTES, MIN_JUDGED, PRECISION_FLOOR, PREVIOUS_HELD_OUT_LINES,
                      PREVIOUS_HELD_OUT_NOTES, PREVIOUS_HELD_OUT_ROUND, Check)

_FLOOR = f"{PRECISION_FLOOR:.0%}".replace("%", " %")


def rules_table() -> str:
    lines = ["| code | rule | severity | default | what it finds | default fix |", "|---|---|---|---|---|---|"]
    for c in CHECKS:
        default = "**preview**" if c.preview else "on"
        lines.append(f'| <a id="{c.code.lower()}"></a>{c.code} | `{c.rule}` | {c.severity} | {default} '
                     f'| {c.doc.finds} | {c.doc.fix} |')
    return "\n".join(lines)


def rule_details() -> str:
    return "\n\n".join(f"#### {c.code}: {c.doc.summary}\n\n{c.doc.why}\n\n```python\n{c.doc.example}\n```"
                       for c in CHECKS)


def _in_sample_status(c: Check) -> str:
    if not c.enough_evidence:
        return "preview: not enough evidence"
    return f"preview: measured below {_FLOOR}" if c.precision < PRECISION_FLOOR else "on"


def _noted(text: str, note: str | None) -> str:
    return f"{text} ({note})" if note else text


def in_sample_table() -> str:
    """The checks that are on, then the preview ones by reason; neighbours with the same row share it."""
    rank = {"on": 0, "preview: not enough evidence": 1}
    gated = sorted((c for c in CHECKS if c.code != ALWAYS_ON), key=lambda c: (rank.get(_in_sample_status(c), 2), c.code))
    rows: list[list] = []
    for c in gated:
        judged = f"{c.measured[0]} true of {c.measured[1]}" if c.measured else "no finding"
        row = [_noted(judged, IN_SAMPLE_NOTES.get(c.code)), _in_sample_status(c)]
        if rows and rows[-1][1:] == row:
            rows[-1][0].append(c.code)
        else:
            rows.append([[c.code], *row])
    lines = ["| code | judged in sample (released + commits) | status |", "|---|---|---|"]
    lines += [f"| {', '.join(codes)} | {judged} | {status} |" for codes, judged, status in rows]
    return "\n".join(lines)


def _held_out_status(c: Check) -> str:
    if not c.preview:
        few = c.held_out is not None and c.held_out[1] < MIN_JUDGED
        return f"on (fewer than {MIN_JUDGED} held out)" if few else "on"
    return "preview" if c.failed_held_out else f"preview (in sample below {_FLOOR})"


def _figure(measured: tuple[int, int] | None, retuned: tuple[int, int] | None, note: str | None) -> str:
    held = f"{measured[0]} of {measured[1]}" if measured else "no finding"
    now = f"; now {retuned[0]} of {retuned[1]}, in sample" if retuned else ""
    return _noted(held + now, note)


def held_out_table() -> str:
    """Every check with enough evidence in sample (the ones whose held-out figure can change their status); the
    last round gates, the round before is shown as it was measured."""
    judged = [c for c in CHECKS if c.code != ALWAYS_ON and c.enough_evidence]
    gated = sorted(judged, key=lambda c: (c.preview, c.code))
    lines = [f"| code | in sample | held out, round {HELD_OUT_ROUND} | round {HELD_OUT_ROUND} now (in sample) "
             f"| held out, round {PREVIOUS_HELD_OUT_ROUND} | fresh repositories, rounds {', '.join(FRESH_ROUNDS)} | status |",
             "|---|---|---|---|---|---|---|"]
    for c in gated:
        held = f"{c.held_out[0]} of {c.held_out[1]}" if c.held_out else "no finding"
        now = f"{c.retuned[0]} of {c.retuned[1]}" if c.retuned else "no fix since"
        before = _figure(c.previous_held_out, c.previous_retuned, PREVIOUS_HELD_OUT_NOTES.get(c.code))
        lines.append(f"| {c.code} | {c.measured[0]} of {c.measured[1]} | {_noted(held, HELD_OUT_NOTES.get(c.code))} "
                     f"| {now} | {before} | {_fresh_figures(c)} | {_held_out_status(c)} |")
    return "\n".join(lines)


def _fresh_figures(c: Check) -> str:
    """``C 2 of 2, D 0 of 22, …``: each round as measured once; a round that did not run the check is left out."""
    figures = c.fresh or {}
    shown = [f"{r} {figures[r][0]} of {figures[r][1]}" if figures[r][1] else f"{r} no finding"
             for r in FRESH_ROUNDS if r in figures]
    return ", ".join(shown) or "not run"


def _default_on_summary(figures: list[tuple[int, int]], lines: int) -> str:
    true, judged = sum(t for t, _ in figures), sum(j for _, j in figures)
    found = f"{true} true of {judged}" if judged else "no default-on finding"
    return f"{found}, {(judged - true) / lines * 20_000:.2f} false warnings per 20k lines"


def held_out_summary() -> str:
    on = [c for c in CHECKS if not c.preview]
    last = _default_on_summary([c.held_out for c in on if c.held_out], HELD_OUT_LINES)
    before = _default_on_summary([c.previous_held_out for c in on if c.previous_held_out], PREVIOUS_HELD_OUT_LINES)
    rounds = []
    for round_ in FRESH_ROUNDS:
        figures = [c.fresh[round_] for c in on if c.fresh and round_ in c.fresh]
        rounds.append(f"round {round_} {_default_on_summary(figures, FRESH_LINES[round_])}")
    gated = ", ".join(f"{c.code} {c.latest_fresh[0]} of {c.latest_fresh[1]}" for c in CHECKS
                      if c.preview and c.latest_fresh and c.failed_held_out)
    return (f"Default-on on fresh code (round {HELD_OUT_ROUND}): {last} (goal: at most 1); "
            f"round {PREVIOUS_HELD_OUT_ROUND}, by the checks on now: {before}; fresh public repositories "
            f"(`{FRESH_JUDGMENTS}`), by the checks on now: {'; '.join(rounds)}"
            + (f" (made preview by them: {gated})" if gated else "") + ".")


SECTIONS = {
    "rules": rules_table,
    "rule-details": rule_details,
    "in-sample": in_sample_table,
    "held-out": held_out_table,
    "held-out-summary": held_out_summary,
}


def update(markdown: str) -> str:
    """``markdown`` with every generated part made again from the catalog."""
    for name, make in SECTIONS.items():
        pattern = re.compile(rf"(<!-- generated: {name} -->\n).*?(\n<!-- end: {name} -->)", re.S)
        if not pattern.search(markdown):
            raise ValueError(f"no generated part {name!r} (<!-- generated: {name} --> ... <!-- end: {name} -->)")
        markdown = pattern.sub(lambda m: m.group(1) + make() + m.group(2), markdown, count=1)
    return markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vramlens.lint.docs", description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path, help="the Markdown file to update (docs/lint.md)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when the file is not current")
    args = parser.parse_args(argv)
    text = args.path.read_text(encoding="utf-8")
    current = update(text)
    if args.check:
        if current != text:
            print(f"{args.path} is not current: run python -m vramlens.lint.docs {args.path}", file=sys.stderr)
            return 1
        return 0
    if current != text:
        args.path.write_text(current, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
