"""docs/lint.md's tables are the catalog's (python -m vramlens.lint.docs docs/lint.md makes them), and each
check's documented example is one it reports."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from vramlens.lint import CHECKS, docs, lint_source

LINT_MD = Path(__file__).resolve().parents[2] / "docs" / "lint.md"
PRELUDE = "import torch\nfrom torch import nn\n\n"  # the examples' imports


def test_docs_lint_md_is_current():
    text = LINT_MD.read_text(encoding="utf-8")
    assert docs.update(text) == text, "docs/lint.md is not current: run python -m vramlens.lint.docs docs/lint.md"


def test_a_change_in_the_catalog_shows_in_the_generated_tables(monkeypatch):
    text = LINT_MD.read_text(encoding="utf-8")
    first = CHECKS[1]
    changed = dataclasses.replace(first, doc=dataclasses.replace(first.doc, finds="something else"))
    monkeypatch.setattr(docs, "CHECKS", (CHECKS[0], changed, *CHECKS[2:]))
    assert "| something else |" in docs.update(text)


def test_the_check_command_fails_on_a_stale_file(tmp_path):
    stale = tmp_path / "lint.md"
    stale.write_text(LINT_MD.read_text(encoding="utf-8").replace("| VL101 | 6 true of 6", "| VL101 | 5 true of 6"))
    assert docs.main(["--check", str(stale)]) == 1
    assert docs.main([str(stale)]) == 0 and docs.main(["--check", str(stale)]) == 0


@pytest.mark.parametrize("check", CHECKS, ids=[c.code for c in CHECKS])
def test_each_documented_example_is_reported_by_its_check(check):
    assert check.doc.finds and check.doc.why and check.doc.example
    found = lint_source(PRELUDE + check.doc.example + "\n", "example.py", select=[check.code], preview=True)
    assert check.code in {f.code for f in found}
