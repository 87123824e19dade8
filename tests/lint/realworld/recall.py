"""Recall cases: a whole file as it was with a GPU memory leak or OOM bug and as it was once a public fix landed.

Each case is a folder with a ``case.json``: where the two versions come from, the buggy lines, the rules that
fit, the evidence. Two kinds of source:

- a published package (``pypi/recall``): the file in the last released wheel with the bug and in the first one
  with the fix, each pinned by version, file name and sha256 and downloaded by pip (``archives``);
- a git commit (``github/recall``, local only): ``before.py`` at the fix's parent and ``after.py`` at the fix,
  built beside ``case.json`` from local clones by ``materialize.py`` and checked against their sha256.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from .archives import Archive, fetch, read_member

HERE = Path(__file__).resolve().parent
PYPI_RECALL = HERE / "pypi" / "recall"
GITHUB_RECALL = HERE / "github" / "recall"
FILES = ("before.py", "after.py")


def is_held_out(name: str) -> bool:
    """How rounds 1-2 were split, before any of their cases was linted: held out when sha1(name) ends in a hex
    digit 0-4. The split itself is each case's ``held_out`` field."""
    return hashlib.sha1(name.encode("utf-8")).hexdigest()[-1] in "01234"


@dataclass(frozen=True)
class KnownAfterFinding:
    """A finding the fixed file is expected to keep (the fix left or introduced it); not held against it."""
    line: int
    code: str
    why: str


@dataclass(frozen=True)
class ReleasedFile:
    """One file inside one published wheel."""
    archive: Archive
    path: str

    @classmethod
    def from_dict(cls, package: str, data: dict) -> ReleasedFile:
        return cls(Archive(package, data["version"], data["file"], data["sha256"]), data["path"])

    def text(self, cache: Path | None = None) -> str:
        return read_member(fetch(self.archive, cache), self.path).decode("utf-8")


@dataclass(frozen=True)
class ReleasePair:
    """The last release with the bug and the first with the fix."""
    package: str
    buggy: ReleasedFile
    fixed: ReleasedFile

    def archives(self) -> list[Archive]:
        return [self.buggy.archive, self.fixed.archive]

    def texts(self, folder: Path, cache: Path | None = None) -> tuple[str, str]:
        return self.buggy.text(cache), self.fixed.text(cache)

    def describe(self) -> str:
        return f"{self.package} {self.buggy.archive.version} -> {self.fixed.archive.version}"


@dataclass(frozen=True)
class FixCommit:
    """A fix commit of a git repository; its two files are built locally beside case.json (materialize.py)."""
    repo: str
    commit: str
    parent: str
    path: str
    sha256: dict[str, str]

    def archives(self) -> list[Archive]:
        return []

    def is_materialized(self, folder: Path) -> bool:
        return all((folder / f).is_file() and sha256_of(folder / f) == self.sha256[f] for f in FILES)

    def texts(self, folder: Path, cache: Path | None = None) -> tuple[str, str]:
        before, after = ((folder / f).read_text(encoding="utf-8") for f in FILES)
        return before, after

    def describe(self) -> str:
        return f"{self.repo} {self.commit[:10]}"


@dataclass
class RecallCase:
    name: str
    source: ReleasePair | FixCommit
    path: str  # the buggy file's path, as linted
    url: str
    license: str
    buggy_lines: list[int | list[int]]
    buggy_lines_are: str
    pattern: str
    rules: list[str]
    evidence: str
    held_out: bool
    folder: Path
    trimmed: str | None = None
    after_known: list[KnownAfterFinding] = field(default_factory=list)
    note: str | None = None
    fix: str | None = None  # the upstream change, when the url documents the bug rather than the fix
    round: int | None = None  # the round that added it; cases without one came in rounds 1-2

    def texts(self, cache: Path | None = None) -> tuple[str, str]:
        """The buggy and the fixed version of the file."""
        return self.source.texts(self.folder, cache)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


_COMMON = ("url", "license", "buggy_lines", "buggy_lines_are", "pattern", "rules", "evidence", "held_out",
           "trimmed", "note", "fix", "round")


def load_case(folder: Path) -> RecallCase:
    data = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    if "package" in data:
        source: ReleasePair | FixCommit = ReleasePair(
            data["package"], ReleasedFile.from_dict(data["package"], data["buggy"]),
            ReleasedFile.from_dict(data["package"], data["fixed"]))
        path = source.buggy.path
    else:
        source = FixCommit(data["repo"], data["commit"], data["parent"], data["path"], data["sha256"])
        path = source.path
    known = [KnownAfterFinding(**k) for k in data.get("after_known", [])]
    return RecallCase(name=folder.name, source=source, path=path, folder=folder, after_known=known,
                      **{k: data[k] for k in _COMMON if k in data})


def load_cases(root: Path = PYPI_RECALL) -> list[RecallCase]:
    return [load_case(f) for f in sorted(root.iterdir()) if (f / "case.json").is_file()]


def statement_span(tree: ast.Module, line: int) -> tuple[int, int]:
    """The lines of the innermost statement at ``line``: a simple statement whole, a compound one by its header."""
    best = (line, line)
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        body = getattr(node, "body", None)
        end = node.end_lineno or node.lineno
        if isinstance(body, list) and body:
            if line >= body[0].lineno:
                continue  # the line is inside the body: an inner statement holds it
            end = body[0].lineno - 1
        if best == (line, line) or end - node.lineno < best[1] - best[0]:
            best = (node.lineno, max(end, node.lineno))
    return best


def site_lines(case: RecallCase, tree: ast.Module) -> list[frozenset[int]]:
    """One set of accepted lines per buggy site: a site is a line or a list of equivalent lines, each widened to
    the statement that holds it (a finding anywhere on a multi-line statement flags it)."""
    sites = []
    for entry in case.buggy_lines:
        lines: set[int] = set()
        for line in entry if isinstance(entry, list) else [entry]:
            start, end = statement_span(tree, line)
            lines.update(range(start, end + 1))
        sites.append(frozenset(lines))
    return sites


def fixed_lines(before: str, after: str, buggy: list[int]) -> set[int]:
    """Lines of the fixed file that the fix wrote, plus the lines where the buggy lines ended up."""
    old, new = before.splitlines(), after.splitlines()
    out: set[int] = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            out.update(j1 + 1 + (line - 1 - i1) for line in buggy if i1 < line <= i2)
        else:
            out.update(range(j1 + 1, j2 + 1))
            if j1 == j2:  # a pure deletion: the line after it is where the code went
                out.add(j1 + 1)
    return out


def flat_lines(case: RecallCase) -> list[int]:
    return [line for entry in case.buggy_lines for line in (entry if isinstance(entry, list) else [entry])]
