"""The rule-quality gate: a check is on by default only when measured right (>= 90 %) on enough real code.

The figures in the catalog are checked against the judged in-sample parts of the real-code corpora (the
precision codebases and the recall cases' buggy and fixed files): the released ones (tests/lint/realworld/pypi,
downloaded like the scoring tests do) always, the commit ones when they are built.
"""

from __future__ import annotations

import json

import pytest

from realworld import corpora
from realworld import gate
from realworld import scoring as sc
from realworld.judgments import load_judgments
from realworld.precision import unpacked_sources
from vramlens.cli import main
from vramlens.lint import CHECKS, lint_source
from vramlens.lint.catalog import COMMIT_LINES, MIN_JUDGED, PRECISION_FLOOR, RELEASED_LINES, Check, is_enabled

PREVIEW = [c for c in CHECKS if c.preview]
DEFAULT_ON = [c for c in CHECKS if not c.preview and c.code != "VL000"]
# host-tensor-to-device is preview at the revision these figures were measured at (6 of 7 judged true).
HOST_TENSOR = "import torch\n\ndef train(loader, device):\n    for x in loader:\n        w = torch.zeros(4).to(device)\n        x.backward()\n"


def test_a_check_is_on_only_when_measured_at_or_above_the_floor_on_enough_findings():
    for c in CHECKS:
        if c.code == "VL000":
            assert not c.preview and c.reason == "always reported"
            continue
        measured = c.measured
        on = measured is not None and measured[1] >= MIN_JUDGED and measured[0] / measured[1] >= PRECISION_FLOOR
        on = on and not c.failed_held_out  # found wrong on enough fresh code: preview whatever its in-sample figure
        assert c.preview == (not on), c.code
        assert c.reason.startswith("on:" if on else "preview:"), (c.code, c.reason)
    assert PREVIEW, "expected at least one preview check at this revision"


def test_the_reason_says_whether_evidence_is_missing_or_precision_is_low():
    unmeasured = Check("VL999", "x", "warning", "x")
    few = Check("VL999", "x", "warning", "x", released=(1, 1), commits=(1, 1))
    low = Check("VL999", "x", "warning", "x", released=(2, 3), commits=(5, 6))
    good = Check("VL999", "x", "warning", "x", released=(2, 2), commits=(8, 9))
    assert unmeasured.preview and "not enough evidence (no finding" in unmeasured.reason
    assert few.preview and few.reason == f"preview: not enough evidence (2 true of 2 judged on real code; {MIN_JUDGED} needed)"
    assert low.preview and low.reason == "preview: measured below 90% (7 true of 9 judged on real code)"
    assert not good.preview and good.reason == "on: 10 true of 11 judged on real code"


def test_the_cli_lists_each_check_with_its_status_and_reason(capsys):
    assert main(["lint", "--list-checks"]) == 0
    out = capsys.readouterr().out.splitlines()
    for c in CHECKS:
        line = next(row for row in out if row.startswith(c.code))
        assert c.rule in line and ("preview" if c.preview else "on") in line and c.reason.split(": ", 1)[-1] in line


def test_preview_checks_are_off_by_default_and_opted_into_by_code_rule_or_preview():
    code = PREVIEW[0]
    assert not is_enabled(code.code, None, None)
    assert is_enabled(code.code, None, None, preview=True)
    assert is_enabled(code.code, [code.code], None)
    assert is_enabled(code.code, [code.rule], None)
    assert not is_enabled(code.code, ["VL"], None), "a prefix does not opt into preview checks"
    assert not is_enabled(code.code, [code.code], [code.code], preview=True), "ignore wins"
    for c in DEFAULT_ON:
        assert is_enabled(c.code, None, None)


def test_the_engine_honours_the_gate():
    assert [f.code for f in lint_source(HOST_TENSOR)] == []
    assert [f.code for f in lint_source(HOST_TENSOR, preview=True)] == ["VL501"]
    assert [f.code for f in lint_source(HOST_TENSOR, select=["VL501"])] == ["VL501"]


def test_the_cli_honours_the_gate(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(HOST_TENSOR)
    assert main(["lint", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []
    assert main(["lint", "--json", "--preview", str(path)]) == 1
    assert [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]] == ["VL501"]
    assert main(["lint", "--json", "--select", "host-tensor-to-device", str(path)]) == 1
    capsys.readouterr()


def _in_sample_tallies(corpus, sources, recall_table, cache=None) -> tuple[dict[str, tuple[int, int]], int]:
    """(true, judged) per finding code, and the lines linted, over the corpus's in-sample codebases and the
    in-sample recall cases' files."""
    judged = load_judgments(corpus.table)
    results = [sc.lint_codebase(c, sources(c), judged) for c in corpus.codebases if not c.held_out]
    recall = gate.in_sample_recall_findings(corpus.cases, recall_table, cache)
    return gate.tallies(results, recall), sum(r.lines for r in results)


def _assert_figures(tallies: dict[str, tuple[int, int]], field: str) -> None:
    for c in CHECKS:
        if c.code != "VL000":
            assert getattr(c, field) == tallies.get(c.code), (
                f"{c.code}: catalog says {field}={getattr(c, field)}, the judged corpus says {tallies.get(c.code)}")


@pytest.mark.slow
def test_the_measured_figures_are_those_of_the_judged_released_corpus(released_corpus):
    corpus = released_corpus
    tallies, lines = _in_sample_tallies(corpus, lambda c: c.sources(corpus.cache), gate.RECALL_TABLES["pypi"], corpus.cache)
    assert lines == RELEASED_LINES
    _assert_figures(tallies, "released")


def test_the_measured_figures_are_those_of_the_judged_commit_corpus(tmp_path):
    corpus = corpora.github_corpus()
    if corpus.missing():
        pytest.skip("the local-only commit corpora are not built (tests/lint/realworld/github/README.md)")
    tallies, lines = _in_sample_tallies(corpus, lambda c: unpacked_sources(c, tmp_path), gate.RECALL_TABLES["github"])
    assert lines == COMMIT_LINES
    _assert_figures(tallies, "commits")


def test_every_recall_judgment_names_a_case_and_a_version_and_gives_a_reason():
    for corpus, table in gate.RECALL_TABLES.items():
        cases = {c.name: c for c in (corpora.released_corpus() if corpus == "pypi" else corpora.github_corpus()).cases}
        for j in load_judgments(table).values():
            version, _, path = j.path.partition("/")
            assert j.codebase in cases and version in ("buggy", "fixed") and path == cases[j.codebase].path, j
            assert j.reason.strip(), j
