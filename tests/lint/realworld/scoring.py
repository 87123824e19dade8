"""Scoring the engine on both corpora: precision on the codebases (from the judgment table), recall on the bug
fixes (buggy sites flagged by a fitting rule, fixed versions left clean). Counts are kept per rule and split."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from . import recall as rc
from .judgments import Judgment, Key
from .linting import PARSE_ERROR, default_on_codes, lint_text, parse
from .precision import CommitCodebase, ReleasedCodebase

SPLITS = ("in-sample", "held-out")


def split_of(held_out: bool) -> str:
    return SPLITS[1] if held_out else SPLITS[0]


@dataclass(frozen=True)
class PrecisionFinding:
    codebase: str
    path: str
    line: int
    code: str
    text: str
    default_on: bool
    verdict: str | None  # None: not judged yet

    @property
    def key(self) -> Key:
        return (self.codebase, self.path, self.code, self.text)


@dataclass
class CodebaseResult:
    codebase: ReleasedCodebase | CommitCodebase
    lines: int
    findings: list[PrecisionFinding]
    unreadable: list[str]  # files the engine could not parse (VL000)


def lint_codebase(codebase: ReleasedCodebase | CommitCodebase, sources: dict[str, bytes],
                  judged: dict[Key, Judgment]) -> CodebaseResult:
    """Lints every counted file (``sources``: path -> content) and looks each finding up in the judgments."""
    on = default_on_codes()
    findings, unreadable, lines = [], [], 0
    for rel, data in sorted(sources.items()):
        text = data.decode("utf-8", errors="surrogateescape")
        lines += text.count("\n")
        source = text.splitlines()
        for f in lint_text(text, rel):
            if f.code == PARSE_ERROR:
                unreadable.append(rel)
                continue
            line_text = source[f.line - 1].strip() if 0 < f.line <= len(source) else ""
            key = (codebase.name, rel, f.code, line_text)
            verdict = judged[key].verdict if key in judged else None
            findings.append(PrecisionFinding(codebase.name, rel, f.line, f.code, line_text, f.code in on, verdict))
    return CodebaseResult(codebase, lines, findings, unreadable)


@dataclass
class PrecisionTally:
    findings: int = 0
    true: int = 0
    false: int = 0
    debatable: int = 0
    unjudged: int = 0
    default_on_true: int = 0
    default_on_judged: int = 0
    default_on_false: int = 0

    def add(self, f: PrecisionFinding) -> None:
        self.findings += 1
        if f.verdict is None:
            self.unjudged += 1
            return
        setattr(self, f.verdict, getattr(self, f.verdict) + 1)
        if f.default_on:
            self.default_on_judged += 1
            self.default_on_true += f.verdict == "true"
            self.default_on_false += f.verdict == "false"

    @property
    def precision(self) -> float | None:
        return self.default_on_true / self.default_on_judged if self.default_on_judged else None


@dataclass
class PrecisionSummary:
    lines: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    tallies: dict[tuple[str, str], PrecisionTally] = field(default_factory=lambda: defaultdict(PrecisionTally))
    # codebases whose findings have not been judged yet, per split: scored apart, not counted in the figures
    not_judged: dict[str, list[CodebaseResult]] = field(default_factory=lambda: defaultdict(list))

    def tally(self, split: str, rule: str = "all") -> PrecisionTally:
        return self.tallies[(split, rule)]

    def false_per_20k(self, split: str) -> float:
        lines = self.lines[split]
        return self.tally(split).default_on_false * 20_000 / lines if lines else 0.0


def summarize_precision(results: list[CodebaseResult]) -> PrecisionSummary:
    """Tallies per split and rule; a codebase marked ``judged: false`` is kept apart until its findings are judged,
    so that its lines do not dilute the false findings per 20k lines."""
    summary = PrecisionSummary()
    for result in results:
        split = split_of(result.codebase.held_out)
        if not result.codebase.judged:
            summary.not_judged[split].append(result)
            continue
        summary.lines[split] += result.lines
        for f in result.findings:
            summary.tally(split, f.code).add(f)
            summary.tally(split).add(f)
    return summary


@dataclass
class CaseResult:
    case: rc.RecallCase
    sites: int
    flagged: int  # by a fitting default-on rule
    flagged_any: int  # by a fitting rule, preview ones included
    fixed_findings: list[tuple[int, str]]  # default-on findings left at the fixed lines of after.py

    @property
    def rule(self) -> str:
        return self.case.rules[0]


def covers(finding, lines: frozenset[int] | set[int]) -> bool:
    """Whether a finding (its first to last line) touches any of the given lines."""
    return any(line in lines for line in range(finding.line, max(finding.end_line, finding.line) + 1))


def flagged_sites(findings, sites: list[frozenset[int]], rules: list[str], on: frozenset[str]) -> tuple[int, int]:
    """Sites flagged by a fitting default-on finding, and by a fitting finding of any rule."""
    fitting = [f for f in findings if f.code in rules]
    return (sum(any(covers(f, s) for f in fitting if f.code in on) for s in sites),
            sum(any(covers(f, s) for f in fitting) for s in sites))


def left_at_fixed_lines(findings, fixed: set[int], known: set[tuple[int, str]], on: frozenset[str]) -> list[tuple[int, str]]:
    """Default-on findings of the fixed file on the lines the fix touched, those it is known to keep excepted."""
    return sorted({(f.line, f.code) for f in findings
                   if f.code in on and (f.line, f.code) not in known and covers(f, fixed)})


def score_case(case: rc.RecallCase, cache: Path | None = None) -> CaseResult:
    on = default_on_codes()
    before, after = case.texts(cache)
    sites = rc.site_lines(case, parse(before))
    flagged, flagged_any = flagged_sites(lint_text(before, case.path), sites, case.rules, on)
    fixed = rc.fixed_lines(before, after, rc.flat_lines(case))
    known = {(k.line, k.code) for k in case.after_known}
    left = left_at_fixed_lines(lint_text(after, case.path), fixed, known, on)
    return CaseResult(case, len(sites), flagged, flagged_any, left)


@dataclass
class RecallTally:
    cases: int = 0
    sites: int = 0
    flagged: int = 0
    flagged_any: int = 0
    fixed_flagged: int = 0  # fixed versions with a default-on finding at their fixed lines

    def add(self, r: CaseResult) -> None:
        self.cases += 1
        self.sites += r.sites
        self.flagged += r.flagged
        self.flagged_any += r.flagged_any
        self.fixed_flagged += bool(r.fixed_findings)

    @property
    def recall(self) -> float | None:
        return self.flagged / self.sites if self.sites else None


def summarize_recall(results: list[CaseResult]) -> dict[tuple[str, str], RecallTally]:
    tallies: dict[tuple[str, str], RecallTally] = defaultdict(RecallTally)
    for r in results:
        split = split_of(r.case.held_out)
        tallies[(split, r.rule)].add(r)
        tallies[(split, "all")].add(r)
    return tallies
