"""Reading the corpus: which (line, rule) pairs each file expects, and comparing with the linter."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from vramlens.lint import lint_file

CORPUS = Path(__file__).resolve().parent / "corpus"
_EXPECT = re.compile(r"#\s*expect:\s*([a-z0-9-]+(?:\s*,\s*[a-z0-9-]+)*)")


def corpus_files(kind: str) -> list[Path]:
    return sorted((CORPUS / kind).glob("*.py"))


def expected_findings(path: Path) -> set[tuple[int, str]]:
    expected = set()
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            expected.update((number, rule.strip()) for rule in match.group(1).split(","))
    return expected


@dataclass
class Comparison:
    expected: set[tuple[int, str]]
    found: set[tuple[int, str]]
    unexpected: set[tuple[int, str]] = field(default_factory=set)

    @property
    def missed(self) -> set[tuple[int, str]]:
        return self.expected - self.found

    @property
    def hits(self) -> set[tuple[int, str]]:
        return self.expected & self.found


def compare(path: Path) -> Comparison:
    """Unmarked info findings are tolerated; any other unmarked finding is unexpected."""
    expected = expected_findings(path)
    findings = lint_file(path, preview=True)  # the corpus tests every check, preview ones included
    found = {(f.line, f.rule) for f in findings}
    unexpected = {(f.line, f.rule) for f in findings if (f.line, f.rule) not in expected and f.severity != "info"}
    return Comparison(expected, found, unexpected)
