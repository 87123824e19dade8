"""Every finding code the linter can emit, its rule family, its severity and its measured precision.

Each rule family declares its codes (``CODES`` in its module under rules/: severity, summary, what it finds, its
default fix, why, an example); this module collects them in ``FAMILIES`` order, adds the figures measured on real
code and decides from them which checks are on by default. Codes are stable: a code is never reused for a
different check.

Quality gate: a check is on by default only when it has been measured right on real code it was not written
for. The evidence is every finding of the check on the in-sample parts of the real-code corpora
(tests/lint/realworld): the precision codebases, whose every finding is judged by hand, and the recall cases'
buggy and fixed files, where a finding of a fitting rule on a buggy line is true and any other is judged by
hand. Two corpora are counted, the released one (wheels, which CI downloads and checks) and the commit one
(built locally). A check is on when at least ``MIN_JUDGED`` of its findings are judged and at least
``PRECISION_FLOOR`` of them are true; otherwise it is a *preview* check, off unless selected by its code or rule
name, or unless preview checks are asked for (``--preview``, the ``vramlens.lint.preview`` setting), and its
reason says which: not enough evidence, or measured below the floor.

The last held-out round (``HELD_OUT_ROUND``: codebases chosen by a rule written before they were linted, linted
once and judged) is the test of that in-sample figure on fresh code: ``held_out`` is (true, judged) there, printed
beside it. A check measured there on at least ``MIN_JUDGED`` findings below the floor is preview whatever its
in-sample figure; with fewer, the in-sample figure decides (the held-out one is shown all the same). The round
before it (``PREVIOUS_HELD_OUT_ROUND``) keeps its single measurement in ``previous_held_out``, shown, never
gating. Rounds of fresh public repositories (``fresh``, below) gate the same way: the latest of them with enough
of a check's findings decides. The figures are re-measured with
``benchmarks/lint_realworld.py``; tests/lint/test_quality_gate.py fails when they drift from the corpora.
"""

from __future__ import annotations

from dataclasses import dataclass

from .findings import Code
from .parse.source import PARSE_ERROR
from .rules.allocator.empty_cache_in_loop import EmptyCacheInLoop
from .rules.device_transfer.host_tensor_to_device import HostTensorToDevice
from .rules.grad_mode.missing_no_grad import MissingNoGrad
from .rules.oom_retry.oom_retry_in_except import OomRetryInExcept
from .rules.retention.retain_graph_in_loop import RetainGraphInLoop
from .rules.retention.retained_graph import RetainedGraph

PRECISION_FLOOR = 0.9
MIN_JUDGED = 3  # fewer judged findings than this is not enough evidence to turn a check on
# Where the figures come from: lines of in-sample real code linted in each precision corpus (tests/lint/realworld).
RELEASED_LINES = 578_125  # pypi/precision, in sample
COMMIT_LINES = 664_886  # github/precision, in sample
HELD_OUT_ROUND = 6  # tests/lint/realworld/README.md, "Rounds and the split"
HELD_OUT_LINES = 70_065  # lines of that round's codebases (gpytorch, segmentation-models-pytorch, pyiqa)
PREVIOUS_HELD_OUT_ROUND = 5  # the round before, measured once too; its figures are shown, no longer gating
PREVIOUS_HELD_OUT_LINES = 251_842  # torchrec, tensordict, vector-quantize-pytorch
# Rounds of fresh public repositories (BENCHMARKS.md, round 11: each picked down an index listing by a rule written
# before its run, linted once with the checks on by default then, every finding judged). ``fresh`` holds a check's
# (true, judged) figure per round, in order; the latest round with at least ``MIN_JUDGED`` of its findings decides,
# as the held-out round does: a check found below the floor there is preview, one found at or above it is judged
# by its in-sample figure. The judgments are committed (``FRESH_JUDGMENTS``) and the figures tested against them.
FRESH_ROUNDS = ("C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R")
FRESH_LINES = {"C": 1_515_454, "D": 182_795, "E": 2_016_986, "F": 219_949, "G": 114_523, "H": 163_610, "I": 92_263, "J": 315_334, "K": 83_836, "L": 83_932, "M": 149_707, "N": 403_450, "O": 94_671, "P": 163_578, "Q": 81_886, "R": 38_699}
FRESH_JUDGMENTS = "benchmarks/lint_heldout_round11.csv"
ALWAYS_ON = PARSE_ERROR.code  # an unreadable file is always reported
# The rule families, in the order they run and their codes are listed.
FAMILIES = (RetainedGraph, MissingNoGrad, RetainGraphInLoop, EmptyCacheInLoop, HostTensorToDevice, OomRetryInExcept)


@dataclass(frozen=True)
class Check:
    code: str
    rule: str
    severity: str
    summary: str
    released: tuple[int, int] | None = None  # (true, judged) findings on the in-sample released corpora
    commits: tuple[int, int] | None = None  # (true, judged) findings on the in-sample commit corpora
    held_out: tuple[int, int] | None = None  # (true, judged) findings on the last held-out round's codebases
    # (true, judged) on that round's codebases now, where a mechanism behind its findings was fixed after seeing
    # them: an in-sample figure (the round no longer tests the check), printed beside the held-out one, never gating
    retuned: tuple[int, int] | None = None
    previous_held_out: tuple[int, int] | None = None  # (true, judged) on the round before, as measured once
    previous_retuned: tuple[int, int] | None = None  # that round's figure since a fix made on seeing it
    fresh: dict[str, tuple[int, int]] | None = None  # round -> (true, judged) there, as measured once
    doc: Code | None = None  # the rule's declaration: what it finds, its default fix, why, an example

    @property
    def measured(self) -> tuple[int, int] | None:
        """(true, judged) on both in-sample corpora together; None when neither has a finding of this check."""
        parts = [m for m in (self.released, self.commits) if m]
        if not parts:
            return None
        return sum(t for t, _ in parts), sum(j for _, j in parts)

    @property
    def precision(self) -> float | None:
        if not self.measured or not self.measured[1]:
            return None
        true, judged = self.measured
        return true / judged

    @property
    def enough_evidence(self) -> bool:
        return self.measured is not None and self.measured[1] >= MIN_JUDGED

    @property
    def failed_held_out(self) -> bool:
        """Measured on enough fresh code (the held-out round or the fresh repositories), and found wrong there too
        often."""
        return self._failed_round() is not None

    def _failed_round(self) -> tuple[int, int] | None:
        deciding = [self.held_out, self.latest_fresh]
        for figures in deciding:
            if figures is not None and figures[1] >= MIN_JUDGED and figures[0] / figures[1] < PRECISION_FLOOR:
                return figures
        return None

    @property
    def latest_fresh(self) -> tuple[int, int] | None:
        """(true, judged) on the latest fresh round with enough of this check's findings to judge it."""
        for round_ in reversed(FRESH_ROUNDS):
            figures = (self.fresh or {}).get(round_)
            if figures is not None and figures[1] >= MIN_JUDGED:
                return figures
        return None

    @property
    def preview(self) -> bool:
        """Off by default: not measured on enough real code, or measured and found wrong too often."""
        if self.code == ALWAYS_ON:
            return False
        precision = self.precision
        return not self.enough_evidence or precision is None or precision < PRECISION_FLOOR or self.failed_held_out

    @property
    def held_out_text(self) -> str:
        measured = self.fresh or {}
        fresh = ", ".join(f"round {r} {_round_text(measured[r], None) if r in measured else 'not run'}" for r in FRESH_ROUNDS)
        return (f"held out (round {HELD_OUT_ROUND}): {_round_text(self.held_out, self.retuned)}; "
                f"round {PREVIOUS_HELD_OUT_ROUND}: {_round_text(self.previous_held_out, self.previous_retuned)}; "
                f"fresh repositories: {fresh}")

    @property
    def reason(self) -> str:
        """Why the check is on or preview, in one phrase."""
        if self.code == ALWAYS_ON:
            return "always reported"
        if self.measured is None:
            return "preview: not enough evidence (no finding on the real-code corpora)"
        true, judged = self.measured
        figures = f"{true} true of {judged} judged on real code"
        if judged < MIN_JUDGED:
            return f"preview: not enough evidence ({figures}; {MIN_JUDGED} needed)"
        failed = self._failed_round()
        if failed is not None:
            return f"preview: measured below {PRECISION_FLOOR:.0%} on held-out code ({failed[0]} true of {failed[1]})"
        if self.preview:
            return f"preview: measured below {PRECISION_FLOOR:.0%} ({figures})"
        return f"on: {figures}"


def _round_text(held_out: tuple[int, int] | None, retuned: tuple[int, int] | None) -> str:
    if held_out is None or not held_out[1]:
        return "no finding"
    text = f"{held_out[0]} true of {held_out[1]}"
    if retuned is not None:
        text += f" (since fixed on seeing it, in sample: {retuned[0]} true of {retuned[1]})"
    return text


# (true, judged) findings per corpus, measured by benchmarks/lint_realworld.py (tests/lint/test_quality_gate.py
# and test_held_out_gate.py fail when these drift from the judged corpora); a code not listed has no finding.
MEASURED: dict[str, dict] = {
    "VL101": dict(released=(1, 1), commits=(5, 5), fresh={"C": (2, 2), "D": (0, 22), "E": (12, 24), "F": (0, 0), "G": (0, 0), "H": (0, 0), "I": (0, 0), "J": (0, 1), "K": (0, 2), "L": (0, 0), "M": (0, 0), "N": (3, 10), "O": (0, 2), "P": (0, 0), "Q": (11, 11), "R": (0, 0)}),
    "VL102": dict(released=(2, 2), commits=(5, 5), fresh={"C": (0, 0), "D": (0, 0), "E": (0, 0), "F": (0, 0), "G": (0, 0), "H": (0, 0), "I": (1, 1), "J": (0, 0), "K": (0, 0), "L": (0, 0), "M": (0, 0), "N": (4, 6), "O": (0, 0), "P": (0, 1), "Q": (0, 0), "R": (0, 0)}),
    "VL103": dict(commits=(3, 3), previous_held_out=(0, 1), previous_retuned=(0, 0), fresh={"C": (0, 3)}),
    "VL105": dict(released=(0, 3), commits=(1, 6), held_out=(0, 7), previous_held_out=(0, 2)),
    "VL107": dict(released=(1, 1), commits=(3, 3), fresh={"C": (0, 0), "D": (0, 0), "E": (0, 0), "F": (0, 0), "G": (0, 0), "H": (0, 0), "I": (0, 0), "J": (0, 0), "K": (0, 0), "L": (0, 0), "M": (0, 0), "N": (0, 0), "O": (0, 0), "P": (0, 0), "Q": (0, 0), "R": (0, 0)}),
    "VL201": dict(released=(7, 26), commits=(19, 43), held_out=(0, 1), previous_held_out=(0, 11)),
    "VL202": dict(released=(3, 3), commits=(15, 15), previous_held_out=(0, 1), previous_retuned=(0, 0),
                  fresh={"C": (10, 10), "D": (4, 4), "E": (1, 10), "F": (5, 5), "G": (10, 11), "H": (1, 3), "I": (4, 5), "J": (2, 2), "K": (10, 10), "L": (7, 10), "M": (6, 8), "N": (21, 21), "O": (6, 12), "P": (1, 1), "Q": (25, 25), "R": (0, 0)}),
    "VL301": dict(commits=(3, 5)),
    "VL401": dict(commits=(1, 1), previous_held_out=(0, 1)),
    "VL501": dict(released=(11, 14), commits=(20, 35), held_out=(10, 12), previous_held_out=(1, 3),
                  previous_retuned=(1, 1)),
    "VL601": dict(released=(1, 1), commits=(1, 1)),
}

# What docs/lint.md's gate tables say beside a figure (vramlens.lint.docs writes them from here).
IN_SAMPLE_NOTES = {
    "VL101": "all on recall files: no finding on 1.24M lines of precision codebases",
    "VL102": "recall files; none on the precision codebases",
    "VL107": "pykeops and DGL's `ctx` stores",
    "VL601": "fairseq's validation retry, in both corpora",
}
HELD_OUT_NOTES = {
    "VL105": "2 debatable: pyiqa's TopIQ attention maps kept on `self` for inspection; the false ones hold GP inputs "
             "without a graph, `.data` stores, a parameter-free positional encoding",
    "VL201": "gpytorch's lazy kernel evaluation, which the marginal log likelihood backpropagates",
    "VL501": "the ten true: pyiqa's metrics rebuilding constant kernels, windows and tables on the host in every "
             "forward; the two false: position ids already on the device, a branch the package never takes",
}
PREVIOUS_HELD_OUT_NOTES = {
    "VL103": "torchrec's pipelined postproc output, cached in the batch's own context and backpropagated by that "
             "batch; fixed since",
    "VL201": "3 debatable: a benchmark's warm-up forwards, a lifecycle benchmark's forward in two runners",
    "VL202": "vector-quantize-pytorch's parameter-free `BinaryMapper` run after `.eval()` in its `__main__` demo; "
             "fixed since (a module class of the file that makes no parameter is no proof)",
    "VL501": "the true one: torchrec's VBE output allocated on the host and copied on every forward; the two false, "
             "its test utilities' export wrapper, are test support code, not flagged since",
}


def _checked(code: Code) -> Check:
    return Check(code.code, code.rule, code.severity, code.summary, **MEASURED.get(code.code, {}), doc=code)


CHECKS: tuple[Check, ...] = tuple(_checked(code) for code in (PARSE_ERROR, *(c for family in FAMILIES for c in family.codes)))
BY_CODE: dict[str, Check] = {check.code: check for check in CHECKS}
RULES: tuple[str, ...] = tuple(dict.fromkeys(check.rule for check in CHECKS))


def _matches(code: str, selector: str) -> bool:
    """A selector is a rule slug, a full code or a code prefix (``VL1`` selects VL1xx)."""
    selector = selector.strip()
    if not selector:
        return False
    if selector == BY_CODE[code].rule:
        return True
    return code.upper().startswith(selector.upper())


def _names_exactly(code: str, selector: str) -> bool:
    """A preview check is opted into by its full code or its rule slug, not by a prefix such as ``VL``."""
    selector = selector.strip()
    return selector.upper() == code.upper() or selector == BY_CODE[code].rule


def is_enabled(code: str, select: list[str] | None, ignore: list[str] | None, preview: bool = False) -> bool:
    if code == "VL000":
        return True  # an unreadable file is always reported
    if select and not any(_matches(code, s) for s in select):
        return False
    if ignore and any(_matches(code, s) for s in ignore):
        return False
    if BY_CODE[code].preview and not preview:
        return bool(select) and any(_names_exactly(code, s) for s in select)
    return True


def unknown_selectors(selectors: list[str]) -> list[str]:
    """Selectors that match no code at all, so the CLI can say so instead of silently ignoring them."""
    return [s for s in selectors if s.strip() and not any(_matches(c.code, s) for c in CHECKS)]
