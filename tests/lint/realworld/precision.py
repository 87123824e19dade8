"""Precision codebases: well-known public PyTorch projects whose every finding is judged by hand.

Two kinds, each with its own ``codebases.json`` and ``judgments.csv``:

- released packages (``pypi/precision``): a published wheel pinned by version, file name and sha256, downloaded
  by pip (``archives``) and read in place; ``include``/``exclude`` say which of its ``.py`` files count, and
  ``files``/``lines`` record how many there are, as a check;
- git commits (``github/precision``, local only): ``<name>-<shortsha>.tar.xz`` built beside the manifest from a
  local clone by ``materialize.py``, holding ``<name>/<path>`` for every counted ``.py`` file plus the license,
  checked against a digest of their contents.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from .archives import Archive, fetch, python_members

HERE = Path(__file__).resolve().parent
PYPI_PRECISION = HERE / "pypi" / "precision"
GITHUB_PRECISION = HERE / "github" / "precision"


def _counts(path: str, include: list[str], exclude: list[str]) -> bool:
    """Whether a path is one of the codebase's counted Python files (an exclude matches at any folder level)."""
    return (path.endswith(".py") and any(path.startswith(p) for p in include)
            and not any(path.startswith(p) or f"/{p}" in f"/{path}" for p in exclude))


@dataclass
class ReleasedCodebase:
    """A codebase as one published wheel."""
    name: str
    package: str
    version: str
    file: str
    sha256: str
    url: str  # the project's home
    license: str
    held_out: bool
    include: list[str]
    exclude: list[str] = field(default_factory=list)
    files: int = 0
    lines: int = 0
    round: int | None = None  # the round that added it; entries without one came in rounds 1-2
    judged: bool = True  # false until every finding has been judged once: then its lines do not count yet

    @property
    def archive(self) -> Archive:
        return Archive(self.package, self.version, self.file, self.sha256)

    def counts(self, path: str) -> bool:
        return _counts(path, self.include, self.exclude)

    def sources(self, cache: Path | None = None) -> dict[str, bytes]:
        """The counted files by their path inside the wheel, checked against the manifest's counts."""
        files = {p: data for p, data in python_members(fetch(self.archive, cache)).items() if self.counts(p)}
        lines = sum(data.count(b"\n") for data in files.values())
        if (len(files), lines) != (self.files, self.lines):
            raise ValueError(f"{self.file}: {len(files)} files and {lines} lines count, codebases.json says "
                             f"{self.files} and {self.lines} (include/exclude changed without re-pinning?)")
        return files


def load_released_codebases(root: Path = PYPI_PRECISION) -> list[ReleasedCodebase]:
    return [ReleasedCodebase(**entry) for entry in json.loads((root / "codebases.json").read_text(encoding="utf-8"))]


@dataclass
class CommitCodebase:
    name: str
    repo: str
    commit: str
    url: str
    license: str
    license_files: list[str]
    held_out: bool
    include: list[str] = field(default_factory=lambda: [""])
    exclude: list[str] = field(default_factory=list)
    files: int = 0
    lines: int = 0
    content_sha256: str = ""
    round: int | None = None
    judged: bool = True

    @property
    def archive(self) -> Path:
        return GITHUB_PRECISION / f"{self.name}-{self.commit[:10]}.tar.xz"

    def counts(self, path: str) -> bool:
        """Whether a repository path is part of the codebase's Python files."""
        return _counts(path, self.include, self.exclude)


def load_commit_codebases(root: Path = GITHUB_PRECISION) -> list[CommitCodebase]:
    return [CommitCodebase(**entry) for entry in json.loads((root / "codebases.json").read_text(encoding="utf-8"))]


def content_digest(files: dict[str, bytes]) -> str:
    """One digest for a set of files: sha256 over each path and its content's sha256, in path order."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode("utf-8", errors="surrogateescape") + b"\0")
        digest.update(hashlib.sha256(files[path]).hexdigest().encode() + b"\n")
    return digest.hexdigest()


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def unpack(codebase: CommitCodebase, dest: Path) -> Path:
    """Unpacks the codebase's archive under ``dest`` and returns its folder, checking it holds what the manifest
    says (a stale or foreign archive is refused rather than scored)."""
    with tarfile.open(codebase.archive, "r:xz") as archive:
        archive.extractall(dest, filter="data")
    root = dest / codebase.name
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in python_files(root)}
    if content_digest(files) != codebase.content_sha256:
        raise ValueError(f"{codebase.archive.name} does not hold the files codebases.json pins for {codebase.name}")
    return root


def unpacked_sources(codebase: CommitCodebase, dest: Path) -> dict[str, bytes]:
    """The commit codebase's counted files by repository path, unpacked under ``dest``."""
    root = unpack(codebase, dest)
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in python_files(root)}
