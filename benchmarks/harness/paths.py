"""The folders of the repository that the benchmarks and corpus tests read."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SERVER = REPO / "server"  # the vramlens package, for a child process in an interpreter without it installed
BENCHMARKS = REPO / "benchmarks"
WORKLOADS = REPO / "workloads"  # the real-workload corpus: its manifest, ground truth and recorder
FIXTURES = REPO / "tests" / "fixtures"
REALWORLD_CAPTURES = FIXTURES / "realworld"  # the recorded captures of the workload corpus
LINT_TESTS = REPO / "tests" / "lint"
LINT_CORPORA = LINT_TESTS / "realworld"  # the real-code lint corpora's manifests and scoring
