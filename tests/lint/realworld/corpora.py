"""The two yardsticks as one object each: the released corpora (wheels, what CI scores) and the local-only commit
corpora (built from git clones). Each knows its manifests, its judgment table, how to get its data and how to
score the engine on it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import recall as rc
from . import scoring as sc
from .archives import Archive, cache_dir, cached, fetch_all
from .judgments import GITHUB_TABLE, TABLE, load_judgments
from .precision import (CommitCodebase, ReleasedCodebase, load_commit_codebases, load_released_codebases,
                        unpacked_sources)


# What the released corpora's archives weigh together, told before they are downloaded (test_realworld.py
# checks the figure against the cache once they are there).
RELEASED_DOWNLOAD_MB = 260  # measured: 259.9 MB for 72 of the 74 (learn2learn's two sdists not yet cached)


@dataclass
class ReleasedCorpus:
    """Codebases and fix pairs as published wheels; CI downloads them (once, into the cache) and scores them."""
    codebases: list[ReleasedCodebase]
    cases: list[rc.RecallCase]
    table: Path = TABLE
    cache: Path | None = None

    def archives(self) -> list[Archive]:
        return [c.archive for c in self.codebases] + [a for case in self.cases for a in case.source.archives()]

    def download(self) -> int:
        """Brings every archive into the cache; returns how many were not there yet."""
        cache = self.cache or cache_dir()
        missing = [a for a in dict.fromkeys(self.archives()) if cached(a, cache) is None]
        fetch_all(missing, cache)
        return len(missing)

    def score(self, scratch: Path) -> tuple[list[sc.CodebaseResult], list[sc.CaseResult]]:
        """Lints and scores everything; the archives are read in place, so ``scratch`` stays unused."""
        judged = load_judgments(self.table)
        results = [sc.lint_codebase(c, c.sources(self.cache), judged) for c in self.codebases]
        return results, [sc.score_case(case, self.cache) for case in self.cases]


@dataclass
class CommitCorpus:
    """Codebases and fix commits of git repositories, built locally by materialize.py; never needed by CI."""
    codebases: list[CommitCodebase]
    cases: list[rc.RecallCase]
    table: Path = GITHUB_TABLE

    def missing(self) -> list[str]:
        gone = [c.archive.name for c in self.codebases if not c.archive.is_file()]
        return gone + [case.name for case in self.cases
                       if isinstance(case.source, rc.FixCommit) and not case.source.is_materialized(case.folder)]

    def download(self) -> int:
        return 0  # built by materialize.py from local clones, nothing to download

    def score(self, scratch: Path) -> tuple[list[sc.CodebaseResult], list[sc.CaseResult]]:
        judged = load_judgments(self.table)
        results = [sc.lint_codebase(c, unpacked_sources(c, scratch), judged) for c in self.codebases]
        return results, [sc.score_case(case) for case in self.cases]


def released_corpus(cache: Path | None = None) -> ReleasedCorpus:
    return ReleasedCorpus(load_released_codebases(), rc.load_cases(rc.PYPI_RECALL), cache=cache)


def github_corpus() -> CommitCorpus:
    return CommitCorpus(load_commit_codebases(), rc.load_cases(rc.GITHUB_RECALL))
