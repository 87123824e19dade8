"""The quality gate's evidence: every finding of each check on a corpus's in-sample part, judged.

Two sources per corpus: the precision codebases (judged in ``precision/judgments.csv``) and the recall cases'
buggy and fixed files. On those, a finding of one of the case's fitting rules that lands on a buggy site is true
by the case itself (the site is the memory bug its fix removed); every other finding is judged by hand in
``recall/judgments.csv``, keyed like the precision table with the case's name for the codebase and
``buggy/<path>`` or ``fixed/<path>`` for the path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import recall as rc
from . import scoring as sc
from .judgments import Judgment, Key, load_judgments
from .linting import PARSE_ERROR, lint_text, parse

RECALL_TABLES = {"pypi": rc.PYPI_RECALL / "judgments.csv", "github": rc.GITHUB_RECALL / "judgments.csv"}
BY_CASE = "a fitting rule on a buggy line of the case"


@dataclass(frozen=True)
class RecallFinding:
    case: str
    version: str  # "buggy" or "fixed"
    path: str  # the file's path in the case
    line: int
    code: str
    text: str
    verdict: str | None  # None: not judged yet

    @property
    def key(self) -> Key:
        return (self.case, f"{self.version}/{self.path}", self.code, self.text)

    def as_judgment(self, verdict: str = "", reason: str = "") -> Judgment:
        return Judgment(self.case, f"{self.version}/{self.path}", self.line, self.code, self.text, verdict, reason)


def recall_findings(case: rc.RecallCase, judged: dict[Key, Judgment], cache: Path | None = None) -> list[RecallFinding]:
    """Every finding on the case's two files, with its verdict: true by the case on a fitting buggy site,
    else as the table says."""
    before, after = case.texts(cache)
    sites = rc.site_lines(case, parse(before))
    found = []
    for version, text in (("buggy", before), ("fixed", after)):
        lines = text.splitlines()
        for f in lint_text(text, case.path):
            if f.code == PARSE_ERROR:
                continue
            line_text = lines[f.line - 1].strip() if 0 < f.line <= len(lines) else ""
            on_site = version == "buggy" and f.code in case.rules and any(sc.covers(f, s) for s in sites)
            finding = RecallFinding(case.name, version, case.path, f.line, f.code, line_text, None)
            verdict = "true" if on_site else (judged[finding.key].verdict if finding.key in judged else None)
            found.append(RecallFinding(case.name, version, case.path, f.line, f.code, line_text, verdict))
    return found


def in_sample_recall_findings(cases: list[rc.RecallCase], table: Path, cache: Path | None = None) -> list[RecallFinding]:
    judged = load_judgments(table)
    return [f for case in cases if not case.held_out for f in recall_findings(case, judged, cache)]


def tallies(precision_results: list[sc.CodebaseResult], recall: list[RecallFinding]) -> dict[str, tuple[int, int]]:
    """(true, judged) per finding code over in-sample precision codebases and recall findings; unjudged
    findings are no evidence either way."""
    counts: dict[str, tuple[int, int]] = {}
    verdicts = [f.verdict for r in precision_results if not r.codebase.held_out for f in r.findings]
    codes = [f.code for r in precision_results if not r.codebase.held_out for f in r.findings]
    verdicts += [f.verdict for f in recall]
    codes += [f.code for f in recall]
    for code, verdict in zip(codes, verdicts):
        if verdict is None:
            continue
        true, judged = counts.get(code, (0, 0))
        counts[code] = (true + (verdict == "true"), judged + 1)
    return counts
