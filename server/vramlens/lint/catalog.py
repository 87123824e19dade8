"""Every finding code the linter can emit, its rule family and its severity.

Codes are stable: a code is never reused for a different check.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    code: str
    rule: str
    severity: str
    summary: str


CHECKS: tuple[Check, ...] = (
    Check("VL000", "parse-error", "error", "the file could not be read or parsed"),
    Check("VL101", "retained-graph", "warning", "a graph-carrying value is added to an accumulator (+=)"),
    Check("VL102", "retained-graph", "warning", "a graph-carrying value is appended to a long-lived container"),
    Check("VL103", "retained-graph", "warning", "a graph-carrying value is stored under a key of a long-lived container"),
    Check("VL104", "retained-graph", "warning", "a graph-carrying value is concatenated onto an accumulator tensor"),
    Check("VL105", "retained-graph", "warning", "a graph-carrying value is stored on an object, class or module that outlives the call"),
    Check("VL106", "retained-graph", "warning", "recurrent state carries its graph into the next iteration"),
    Check("VL201", "missing-no-grad", "warning", "inference code builds an autograd graph nobody uses"),
    Check("VL301", "retain-graph-in-loop", "warning", "backward(retain_graph=True) or create_graph=True inside a loop"),
    Check("VL401", "empty-cache-in-loop", "info", "torch.cuda.empty_cache() or gc.collect() on every iteration"),
    Check("VL501", "host-tensor-to-device", "warning", "a constant tensor is built on the CPU and copied to the GPU repeatedly"),
    Check("VL601", "oom-retry-in-except", "warning", "a retry runs inside an out-of-memory except block"),
)

BY_CODE: dict[str, Check] = {check.code: check for check in CHECKS}
RULES: tuple[str, ...] = tuple(dict.fromkeys(check.rule for check in CHECKS))


def check(code: str) -> Check:
    return BY_CODE[code]


def _matches(code: str, selector: str) -> bool:
    """A selector is a rule slug, a full code or a code prefix (``VL1`` selects VL1xx)."""
    selector = selector.strip()
    if not selector:
        return False
    if selector == BY_CODE[code].rule:
        return True
    return code.upper().startswith(selector.upper())


def is_enabled(code: str, select: list[str] | None, ignore: list[str] | None) -> bool:
    if code == "VL000":
        return True  # an unreadable file is always reported
    if select and not any(_matches(code, s) for s in select):
        return False
    return not (ignore and any(_matches(code, s) for s in ignore))


def unknown_selectors(selectors: list[str]) -> list[str]:
    """Selectors that match no code at all, so the CLI can say so instead of silently ignoring them."""
    return [s for s in selectors if s.strip() and not any(_matches(c.code, s) for c in CHECKS)]
