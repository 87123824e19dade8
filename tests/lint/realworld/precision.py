"""Precision codebases: well-known public PyTorch projects pinned by commit, kept as archives of their Python files.

``precision/codebases.json`` names each codebase, its repository and commit, which folders count, its license
file and whether it is held out; ``precision/<name>-<shortsha>.tar.xz`` holds ``<name>/<path>`` for every
counted ``.py`` file plus the license.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

PRECISION = Path(__file__).resolve().parent / "precision"


@dataclass
class Codebase:
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

    @property
    def archive(self) -> Path:
        return PRECISION / f"{self.name}-{self.commit[:10]}.tar.xz"

    def counts(self, path: str) -> bool:
        """Whether a repository path is part of the codebase's Python files."""
        return (path.endswith(".py") and any(path.startswith(p) for p in self.include)
                and not any(path.startswith(p) or f"/{p}" in f"/{path}" for p in self.exclude))


def load_codebases(root: Path = PRECISION) -> list[Codebase]:
    return [Codebase(**entry) for entry in json.loads((root / "codebases.json").read_text(encoding="utf-8"))]


def content_digest(files: dict[str, bytes]) -> str:
    """One digest for a set of files: sha256 over each path and its content's sha256, in path order."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode("utf-8", errors="surrogateescape") + b"\0")
        digest.update(hashlib.sha256(files[path]).hexdigest().encode() + b"\n")
    return digest.hexdigest()


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def unpack(codebase: Codebase, dest: Path) -> Path:
    """Unpacks the codebase's archive under ``dest`` and returns its folder, checking it holds what the manifest
    says (a stale or foreign archive is refused rather than scored)."""
    with tarfile.open(codebase.archive, "r:xz") as archive:
        archive.extractall(dest, filter="data")
    root = dest / codebase.name
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in python_files(root)}
    if content_digest(files) != codebase.content_sha256:
        raise ValueError(f"{codebase.archive.name} does not hold the files codebases.json pins for {codebase.name}")
    return root
