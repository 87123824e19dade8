"""The linter against real cases reduced from public bug reports (tests/lint/corpus)."""

from __future__ import annotations

import pytest

from corpus_expectations import compare, corpus_files

POSITIVES = corpus_files("positive")
NEGATIVES = corpus_files("negative")


@pytest.mark.parametrize("path", POSITIVES, ids=[p.name for p in POSITIVES])
def test_positive_case_is_flagged_exactly(path):
    result = compare(path)
    assert result.expected, f"{path.name} marks no `# expect:` line"
    assert not result.missed, f"missed (line, rule): {sorted(result.missed)}"
    assert not result.unexpected, f"unexpected (line, rule): {sorted(result.unexpected)}"


@pytest.mark.parametrize("path", NEGATIVES, ids=[p.name for p in NEGATIVES])
def test_negative_case_is_not_flagged(path):
    result = compare(path)
    assert not result.unexpected, f"false positives (line, rule): {sorted(result.unexpected)}"


def test_corpus_is_present():
    assert POSITIVES and NEGATIVES
