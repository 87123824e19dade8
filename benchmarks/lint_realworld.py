"""`vramlens lint` on real code: precision on public codebases, recall on public memory-leak fixes.

Reads the corpora in tests/lint/realworld (see its README): by default the released ones (`pypi/`, wheels that
pip downloads once into the cache), with `--corpus github` the local-only commit ones (build their data first
with materialize.py). Lints every file with every rule, and prints per rule and in all, for the in-sample and
held-out parts separately:

- precision corpus: findings, true / false / debatable / unjudged, precision of the default-on rules
  (true / judged), false default-on findings per 20k lines, lines of code; a codebase whose findings have not
  been judged yet (`"judged": false` in codebases.json) is listed apart as "not judged yet", outside the figures;
- recall corpus: buggy sites flagged by a fitting default-on rule / sites (and with preview rules too), and
  fixed versions with a default-on finding left at their fixed lines.

    .venv/bin/python benchmarks/lint_realworld.py [--corpus pypi|github] [--unjudged] [--unjudged-csv FILE] [--cases]

It also prints how long the download (when the cache lacked archives) and the linting took.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from harness.lint_corpus import realworld  # noqa: F401  (makes the corpora's modules importable by name)
from realworld import corpora, gate
from realworld import scoring as sc
from realworld.judgments import Judgment, write_judgments
from realworld.linting import default_on_codes
from vramlens.lint import CHECKS
from vramlens.lint.catalog import MIN_JUDGED, PRECISION_FLOOR


def _pct(value: float | None) -> str:
    return "   -  " if value is None else f"{100 * value:5.1f}%"


def print_precision(summary: sc.PrecisionSummary) -> None:
    print("precision corpus (default-on precision = true / judged default-on findings)")
    print(f"  {'split':9} {'rule':6} {'findings':>8} {'true':>5} {'false':>5} {'debat.':>6} {'unjudged':>8} "
          f"{'precision':>9} {'false/20k':>9} {'lines':>8}")
    for split in sc.SPLITS:
        rules = sorted(r for s, r in summary.tallies if s == split and r != "all") + ["all"]
        for rule in rules:
            t = summary.tally(split, rule)
            per20k = f"{summary.false_per_20k(split):9.2f}" if rule == "all" else " " * 9
            lines = f"{summary.lines[split]:8d}" if rule == "all" else " " * 8
            print(f"  {split:9} {rule:6} {t.findings:8d} {t.true:5d} {t.false:5d} {t.debatable:6d} {t.unjudged:8d} "
                  f"{_pct(t.precision):>9} {per20k} {lines}")
        for r in summary.not_judged[split]:
            on = sum(f.default_on for f in r.findings)
            print(f"  {split:9} not judged yet: {r.codebase.name} ({r.lines} lines, {len(r.findings)} findings, "
                  f"{on} default-on; not in the figures above)")


def print_recall(tallies: dict) -> None:
    print("recall corpus (sites flagged by a fitting default-on rule; fixed = fixed versions still flagged)")
    print(f"  {'split':9} {'rule':6} {'cases':>5} {'sites':>5} {'flagged':>7} {'recall':>7} {'+preview':>8} {'fixed':>5}")
    for split in sc.SPLITS:
        rules = sorted(r for s, r in tallies if s == split and r != "all") + ["all"]
        for rule in rules:
            t = tallies[(split, rule)]
            print(f"  {split:9} {rule:6} {t.cases:5d} {t.sites:5d} {t.flagged:7d} {_pct(t.recall):>7} "
                  f"{t.flagged_any:8d} {t.fixed_flagged:5d}")


def print_rounds(results: list[sc.CaseResult]) -> None:
    """Each held-out round apart: a round is measured once, when it comes, and reported beside the others."""
    rounds: dict[int, list[sc.CaseResult]] = {}
    for r in results:
        if r.case.held_out:
            rounds.setdefault(r.case.round or 0, []).append(r)
    for number, members in sorted(rounds.items()):
        sites = sum(r.sites for r in members)
        flagged = sum(r.flagged for r in members)
        print(f"  held-out round {number}: {len(members)} cases, {flagged}/{sites} sites flagged by default-on "
              f"rules (+preview {sum(r.flagged_any for r in members)}), fixed versions flagged "
              f"{sum(bool(r.fixed_findings) for r in members)}")


def print_gate(tallies: dict[str, tuple[int, int]], field: str) -> None:
    """What the quality gate sees on this corpus (in-sample codebases and recall files), beside the catalog."""
    print(f"quality gate evidence (in sample: precision codebases + recall files; catalog field `{field}`)")
    print(f"  {'code':6} {'true':>5} {'judged':>6} {'catalog':>9}  status (both corpora, from the catalog)")
    for c in CHECKS:
        if c.code == "VL000":
            continue
        true, judged = tallies.get(c.code, (0, 0))
        recorded = getattr(c, field)
        mark = "" if recorded == (tallies.get(c.code)) else "  <- catalog differs"
        print(f"  {c.code:6} {true:5d} {judged:6d} {str(recorded):>9}  {c.reason}{mark}")
    print(f"  (on by default: >= {MIN_JUDGED} judged findings over both corpora, >= {PRECISION_FLOOR:.0%} true)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("pypi", "github"), default="pypi",
                        help="the released corpora (default) or the local-only commit ones")
    parser.add_argument("--unjudged", action="store_true", help="list every finding not judged yet")
    parser.add_argument("--unjudged-csv", type=Path, help="write the unjudged findings as judgment rows to fill in")
    parser.add_argument("--cases", action="store_true", help="print each recall case's result")
    args = parser.parse_args()

    if args.corpus == "github":
        corpus = corpora.github_corpus()
        if corpus.missing():
            print(f"the commit corpora's data is not built ({', '.join(corpus.missing()[:5])}...): "
                  "run tests/lint/realworld/materialize.py")
            return 2
    else:
        corpus = corpora.released_corpus()
    print("default-on codes:", " ".join(sorted(default_on_codes())))
    started = time.perf_counter()
    fetched = corpus.download()
    downloaded = time.perf_counter() - started
    with tempfile.TemporaryDirectory(prefix="vramlens-realworld-") as tmp:
        results, case_results = corpus.score(Path(tmp))
    elapsed = time.perf_counter() - started - downloaded

    print_precision(sc.summarize_precision(results))
    print_recall(sc.summarize_recall(case_results))
    print_rounds(case_results)
    recall_findings = gate.in_sample_recall_findings(corpus.cases, gate.RECALL_TABLES[args.corpus],
                                                     getattr(corpus, "cache", None))
    print_gate(gate.tallies(results, recall_findings), "released" if args.corpus == "pypi" else "commits")
    unreadable = [(r.codebase.name, p) for r in results for p in r.unreadable]
    print(f"files the engine could not parse: {len(unreadable)}; {fetched} archives downloaded in {downloaded:.1f} s; "
          f"linting took {elapsed:.1f} s")
    if args.cases:
        for r in case_results:
            print(f"  {r.case.name:40} {'held-out' if r.case.held_out else 'in-sample':9} {r.flagged}/{r.sites}"
                  f" (+preview {r.flagged_any}) fixed-version findings: {r.fixed_findings or '-'}")
    unjudged = [f for r in results for f in r.findings if f.verdict is None]
    unjudged_recall = [f for f in recall_findings if f.verdict is None]
    if args.unjudged:
        for f in unjudged:
            print(f"  unjudged {f.codebase}/{f.path}:{f.line} {f.code} {'' if f.default_on else '(preview) '}{f.text}")
        for f in unjudged_recall:
            print(f"  unjudged recall {f.case} {f.version}:{f.line} {f.code} {f.text}")
    if args.unjudged_csv:
        unique = {f.key: f for f in unjudged}
        write_judgments([Judgment(f.codebase, f.path, f.line, f.code, f.text, "", "") for f in unique.values()],
                        args.unjudged_csv)
        print(f"wrote {len(unique)} rows to {args.unjudged_csv}")
        if unjudged_recall:
            recall_csv = args.unjudged_csv.with_name(args.unjudged_csv.stem + "-recall.csv")
            write_judgments([f.as_judgment() for f in {f.key: f for f in unjudged_recall}.values()], recall_csv)
            print(f"wrote {len(unjudged_recall)} recall rows to {recall_csv} (for {gate.RECALL_TABLES[args.corpus]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
