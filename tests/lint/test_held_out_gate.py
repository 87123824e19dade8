"""The catalog's held-out figures are those of the last held-out round as judged and measured once
(catalog.HELD_OUT_ROUND), and of the round before (shown, not gating); a check found wrong on enough findings of
the last round is preview whatever its in-sample figure."""

from __future__ import annotations

from collections import defaultdict

import pytest

from realworld import scoring as sc
from realworld.judgments import load_judgments
from vramlens.lint import CHECKS
from vramlens.lint.catalog import HELD_OUT_LINES, HELD_OUT_ROUND, PREVIOUS_HELD_OUT_LINES, PREVIOUS_HELD_OUT_ROUND, Check


def test_enough_false_findings_on_held_out_code_make_a_check_preview():
    good_in_sample = dict(released=(5, 5), commits=(5, 5))
    assert not Check("VL999", "x", "warning", "x", **good_in_sample).preview
    assert not Check("VL999", "x", "warning", "x", held_out=(0, 2), **good_in_sample).preview  # too few to judge
    failed = Check("VL999", "x", "warning", "x", held_out=(1, 4), **good_in_sample)
    assert failed.preview and "held-out code (1 true of 4)" in failed.reason


def _tallies(corpus, judged, round_: int) -> tuple[dict[str, tuple[int, int]], int]:
    """(true, judged) per code on one round's codebases now, and their lines; every finding must be judged."""
    fresh = [c for c in corpus.codebases if c.round == round_]
    assert fresh and all(c.held_out and c.judged for c in fresh)
    tallies: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    lines = 0
    for codebase in fresh:
        result = sc.lint_codebase(codebase, codebase.sources(corpus.cache), judged)
        lines += result.lines
        for finding in result.findings:
            assert finding.verdict is not None, f"not judged: {finding}"
            tallies[finding.code][1] += 1  # debatable counts as judged, not true (as in sample)
            tallies[finding.code][0] += finding.verdict == "true"
    return {code: (t, j) for code, (t, j) in tallies.items()}, lines


@pytest.mark.slow
@pytest.mark.parametrize("round_, lines, measured_of, retuned_of", [
    (HELD_OUT_ROUND, HELD_OUT_LINES, lambda c: c.held_out, lambda c: c.retuned),
    (PREVIOUS_HELD_OUT_ROUND, PREVIOUS_HELD_OUT_LINES, lambda c: c.previous_held_out, lambda c: c.previous_retuned),
], ids=["last round", "round before"])
def test_the_held_out_figures_are_those_of_the_judged_rounds(released_corpus, round_, lines, measured_of, retuned_of):
    corpus = released_corpus
    tallies, counted = _tallies(corpus, load_judgments(corpus.table), round_)
    assert counted == lines
    # The catalog keeps the single measurement; a false finding removed by a mechanism fixed since may be gone
    # from the engine's findings, a true one may not, and no new finding may appear unjudged (asserted above).
    for c in CHECKS:
        if c.code == "VL000":
            continue
        now = tallies.get(c.code, (0, 0))
        measured = measured_of(c) or (0, 0)
        assert now[0] == measured[0] and now[1] <= measured[1], (c.code, measured, now)
        if retuned_of(c) is not None:  # the round's figure since a fix made on seeing it: in sample, stated exactly
            assert now == retuned_of(c), (c.code, retuned_of(c), now)


def test_only_the_last_round_gates():
    good_in_sample = dict(released=(5, 5), commits=(5, 5))
    shown = Check("VL999", "x", "warning", "x", previous_held_out=(0, 10), **good_in_sample)
    assert not shown.preview and f"round {PREVIOUS_HELD_OUT_ROUND}: 0 true of 10" in shown.held_out_text


def test_the_fresh_repository_figures_are_those_of_the_committed_judgments():
    """The rounds of fresh public repositories (BENCHMARKS.md, round 11) cannot be fetched by CI: their judged
    findings are committed, and the catalog's ``fresh`` figures are their tallies per round, every verdict one of
    three."""
    import csv
    from pathlib import Path

    from vramlens.lint.catalog import FRESH_JUDGMENTS, FRESH_LINES, FRESH_ROUNDS

    path = Path(__file__).resolve().parents[2] / FRESH_JUDGMENTS
    with path.open(newline="") as table:
        rows = [row for row in csv.DictReader(table) if row["round"] in FRESH_ROUNDS]
    assert rows and all(row["verdict"] in {"true", "false", "debatable"} and row["reason"] for row in rows)
    assert set(FRESH_LINES) == set(FRESH_ROUNDS)
    tallies: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        tallies[row["code"], row["round"]][1] += 1
        tallies[row["code"], row["round"]][0] += row["verdict"] == "true"
    for c in CHECKS:
        for round_ in FRESH_ROUNDS:
            measured = (c.fresh or {}).get(round_)
            # a round that ran the check and found nothing says (0, 0); a round that did not run it says nothing
            assert tuple(tallies.get((c.code, round_), (0, 0))) == (measured or (0, 0)), (c.code, round_)


def test_the_latest_fresh_round_with_enough_findings_decides():
    good_in_sample = dict(released=(5, 5), commits=(5, 5))
    failed_then_passed = Check("VL999", "x", "warning", "x", fresh={"C": (0, 22), "D": (4, 4)}, **good_in_sample)
    assert not failed_then_passed.preview and failed_then_passed.latest_fresh == (4, 4)
    failed_then_too_few = Check("VL999", "x", "warning", "x", fresh={"C": (0, 3), "D": (1, 1)}, **good_in_sample)
    assert failed_then_too_few.preview and "held-out code (0 true of 3)" in failed_then_too_few.reason
