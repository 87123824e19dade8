"""Recall cases: files as they were before and after a public commit that fixed a GPU memory leak or OOM.

Each case lives in ``recall/<name>/``: ``case.json`` (the source, the buggy lines, the rules that fit, the
evidence) beside ``before.py`` and ``after.py``, the whole file at the fix's parent and at the fix.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

RECALL = Path(__file__).resolve().parent / "recall"
FILES = ("before.py", "after.py")


def is_held_out(name: str) -> bool:
    """The split, fixed before any case was linted: held out when sha1(name) ends in a hex digit 0-4."""
    return hashlib.sha1(name.encode("utf-8")).hexdigest()[-1] in "01234"


@dataclass(frozen=True)
class KnownAfterFinding:
    """A finding the fixed file is expected to keep (the fix left or introduced it); not held against it."""
    line: int
    code: str
    why: str


@dataclass
class RecallCase:
    name: str
    repo: str
    commit: str
    parent: str
    path: str
    url: str
    license: str
    buggy_lines: list[int | list[int]]
    buggy_lines_are: str
    pattern: str
    rules: list[str]
    evidence: str
    sha256: dict[str, str]
    held_out: bool
    trimmed: str | None = None
    after_known: list[KnownAfterFinding] = field(default_factory=list)
    note: str | None = None
    root: Path = RECALL

    @property
    def folder(self) -> Path:
        return self.root / self.name

    def file(self, which: str) -> Path:
        return self.folder / which

    def text(self, which: str) -> str:
        return self.file(which).read_text(encoding="utf-8")

    def is_materialized(self) -> bool:
        return all(self.file(f).is_file() and sha256_of(self.file(f)) == self.sha256[f] for f in FILES)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_case(folder: Path) -> RecallCase:
    data = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    known = [KnownAfterFinding(**k) for k in data.pop("after_known", [])]
    return RecallCase(name=folder.name, after_known=known, root=folder.parent, **data)


def load_cases(root: Path = RECALL) -> list[RecallCase]:
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
