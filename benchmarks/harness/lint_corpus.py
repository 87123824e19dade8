"""The lint corpora: the real-code ones (tests/lint/realworld: manifests, archives, linting and scoring)
and the expectations written into the small corpus's files (tests/lint/corpus_expectations.py)."""

from __future__ import annotations

from ._loading import load
from .paths import LINT_CORPORA, LINT_TESTS

realworld = load("realworld", LINT_CORPORA)
expectations = load("corpus_expectations", LINT_TESTS / "corpus_expectations.py")
