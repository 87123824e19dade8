"""The judgment tables: every finding on a precision corpus judged true, false or debatable, with a reason.

A judgment is keyed by codebase, path, finding code and the finding line's text (stripped), so it survives
line shifts; the line number is kept for reading only.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "pypi" / "precision" / "judgments.csv"
GITHUB_TABLE = Path(__file__).resolve().parent / "github" / "precision" / "judgments.csv"
COLUMNS = ("codebase", "path", "line", "rule", "text", "verdict", "reason")
VERDICTS = ("true", "false", "debatable")

Key = tuple[str, str, str, str]


@dataclass(frozen=True)
class Judgment:
    codebase: str
    path: str
    line: int
    rule: str
    text: str
    verdict: str
    reason: str

    @property
    def key(self) -> Key:
        return (self.codebase, self.path, self.rule, self.text)


def load_judgments(path: Path = TABLE) -> dict[Key, Judgment]:
    if not path.is_file():
        return {}
    with path.open(newline="", encoding="utf-8") as handle:
        rows = [Judgment(**{**row, "line": int(row["line"])}) for row in csv.DictReader(handle)]
    bad = [r for r in rows if r.verdict not in VERDICTS or not r.reason.strip()]
    if bad:
        raise ValueError(f"{path.name}: verdict must be one of {VERDICTS} with a reason: {bad[0]}")
    return {r.key: r for r in rows}


def write_judgments(rows: list[Judgment], path: Path = TABLE) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(COLUMNS)
        for r in sorted(rows, key=lambda r: (r.codebase, r.path, r.line, r.rule, r.text)):
            writer.writerow([r.codebase, r.path, r.line, r.rule, r.text, r.verdict, r.reason])
