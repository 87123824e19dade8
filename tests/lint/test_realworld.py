"""The linter against real code: precision on public codebases, recall on public memory-leak fixes.

The manifests are checked always; the scores need the corpus data (tests/lint/realworld/README.md says how to
build it) and fail when they drop below tests/lint/realworld/floors.json or when a default-on finding has not
been judged yet.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from realworld import recall as rc
from realworld import scoring as sc
from realworld.judgments import TABLE, VERDICTS, Judgment, load_judgments, write_judgments
from realworld.linting import all_codes
from realworld.precision import content_digest, load_codebases, unpack

FLOORS = json.loads((Path(rc.__file__).parent / "floors.json").read_text(encoding="utf-8"))
CASES = rc.load_cases()
CODEBASES = load_codebases()
SHA = re.compile(r"^[0-9a-f]{40}$")


# --- the manifests --------------------------------------------------------------------------------------------

def test_recall_corpus_has_thirty_cases_about_a_third_held_out():
    assert len(CASES) >= 30
    held = sum(c.held_out for c in CASES)
    assert 0.25 <= held / len(CASES) <= 0.45, f"{held} of {len(CASES)} held out"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_manifest_is_complete(case):
    assert case.held_out == rc.is_held_out(case.name), "held_out must follow the sha1 rule"
    assert SHA.match(case.commit) and SHA.match(case.parent) and case.commit != case.parent
    assert case.url.startswith("https://github.com/") and case.evidence.strip() and case.pattern.strip()
    assert case.buggy_lines_are in ("leak", "changed")
    assert case.rules and set(case.rules) <= set(all_codes())
    assert case.buggy_lines and all(rc.flat_lines(case)) and all(isinstance(n, int) and n > 0 for n in rc.flat_lines(case))
    assert set(case.sha256) == set(rc.FILES)


def test_precision_corpus_has_eight_codebases_two_held_out():
    assert len(CODEBASES) >= 8
    assert sum(c.held_out for c in CODEBASES) == 2
    assert len({c.name for c in CODEBASES}) == len(CODEBASES)
    for c in CODEBASES:
        assert SHA.match(c.commit) and c.files > 0 and c.lines > 0 and len(c.content_sha256) == 64, c.name


def test_every_judgment_names_a_codebase_and_gives_a_reason():
    judged = load_judgments()
    names = {c.name for c in CODEBASES}
    assert judged
    for j in judged.values():
        assert j.codebase in names and j.verdict in VERDICTS and j.reason.strip(), j


def test_floors_are_fractions_and_counts():
    for split in sc.SPLITS:
        assert 0 <= FLOORS["precision"][split] <= 1 and 0 <= FLOORS["recall"][split] <= 1
        assert FLOORS["false_per_20k_max"][split] >= 0 and FLOORS["fixed_versions_flagged_max"][split] >= 0


# --- the scoring helpers --------------------------------------------------------------------------------------

@dataclass
class _Finding:
    line: int
    end_line: int
    code: str


def test_statement_span_widens_to_the_whole_statement_and_stops_at_a_header():
    tree = ast.parse("for x in y:\n    total = (\n        a +\n        b)\n    z = 1\n")
    assert rc.statement_span(tree, 3) == (2, 4)
    assert rc.statement_span(tree, 1) == (1, 1)
    assert rc.statement_span(tree, 5) == (5, 5)


def test_fixed_lines_are_the_written_lines_and_where_the_buggy_line_moved():
    before = "a\nb\nbad\nc\n"
    after = "new\na\nb\nbad\nc\n"
    assert rc.fixed_lines(before, after, [3]) == {1, 4}
    assert rc.fixed_lines("a\nbad\nc\n", "a\ngood\nc\n", [2]) == {2}


def test_a_site_counts_once_and_only_for_its_rules():
    sites = [frozenset({3, 4}), frozenset({9})]
    findings = [_Finding(4, 4, "VL101"), _Finding(3, 3, "VL101"), _Finding(9, 9, "VL201")]
    assert sc.flagged_sites(findings, sites, ["VL101"], frozenset({"VL101"})) == (1, 1)
    assert sc.flagged_sites(findings, sites, ["VL101", "VL201"], frozenset({"VL101"})) == (1, 2)
    assert sc.flagged_sites([_Finding(1, 4, "VL101")], sites, ["VL101"], frozenset({"VL101"})) == (1, 1)


def test_findings_left_on_fixed_lines_skip_preview_and_known_ones():
    findings = [_Finding(5, 5, "VL102"), _Finding(6, 6, "VL301"), _Finding(7, 7, "VL201"), _Finding(20, 20, "VL102")]
    left = sc.left_at_fixed_lines(findings, {5, 6, 7}, {(6, "VL301")}, frozenset({"VL102", "VL301"}))
    assert left == [(5, "VL102")]


def test_judgments_survive_a_round_trip(tmp_path):
    rows = [Judgment("cb", "a.py", 3, "VL102", 'x.append(y, "q")', "false", "no graph, a, b")]
    write_judgments(rows, tmp_path / "j.csv")
    assert list(load_judgments(tmp_path / "j.csv").values()) == rows


def test_a_content_digest_changes_with_any_file():
    files = {"a.py": b"x = 1\n", "b/c.py": b"y = 2\n"}
    assert content_digest(files) == content_digest(dict(reversed(list(files.items()))))
    assert content_digest(files) != content_digest({**files, "a.py": b"x = 2\n"})


# --- the scores (need the corpus data) ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    missing = [c.archive.name for c in CODEBASES if not c.archive.is_file()]
    missing += [c.name for c in CASES if not c.is_materialized()]
    if missing:
        pytest.skip(f"the real-code corpus data is not built ({len(missing)} missing, e.g. {missing[0]}): "
                    "run `python tests/lint/realworld/materialize.py --clones DIR` (see its README)")
    root = tmp_path_factory.mktemp("realworld")
    judged = load_judgments(TABLE)
    results = [sc.lint_codebase(c, unpack(c, root), judged) for c in CODEBASES]
    cases = [sc.score_case(c) for c in CASES]
    return results, sc.summarize_precision(results), sc.summarize_recall(cases)


def test_every_default_on_finding_is_judged(scores):
    results, _, _ = scores
    todo = sorted({f"{f.codebase}/{f.path}:{f.line} {f.code} {f.text}"
                   for r in results for f in r.findings if f.default_on and f.verdict is None})
    assert not todo, (f"{len(todo)} findings to judge in tests/lint/realworld/precision/judgments.csv "
                      "(benchmarks/lint_realworld.py --unjudged-csv FILE writes them as rows):\n" + "\n".join(todo))


@pytest.mark.parametrize("split", sc.SPLITS)
def test_precision_stays_above_its_floor(scores, split):
    _, summary, _ = scores
    tally = summary.tally(split)
    assert (tally.precision or 0.0) >= FLOORS["precision"][split], (
        f"{split}: {tally.default_on_true} true of {tally.default_on_judged} judged default-on findings")
    assert summary.false_per_20k(split) <= FLOORS["false_per_20k_max"][split]


@pytest.mark.parametrize("split", sc.SPLITS)
def test_recall_stays_above_its_floor(scores, split):
    _, _, recall = scores
    tally = recall[(split, "all")]
    assert (tally.recall or 0.0) >= FLOORS["recall"][split], f"{split}: {tally.flagged} of {tally.sites} sites flagged"
    assert tally.fixed_flagged <= FLOORS["fixed_versions_flagged_max"][split]
