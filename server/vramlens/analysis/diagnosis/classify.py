"""Classify the run and say why, with numbers.

Causes: working_set, retained_references, fragmentation, outside_allocator (OOM runs);
cached_not_leak, retained_references, no_problem (completed runs). Confidence is 0–1
(high ≥ 0.75, medium ≥ 0.5, low below; docs/analysis-json.md says how each is set).
Fragmentation is never concluded from reserved − allocated alone: it needs a request that
the free reserved memory could hold in total but no single free block could.
"""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.analysis.load.ending import moment_words, taken_mid_run
from vramlens.analysis.model import Accounting, Diagnosis, LineStat
from vramlens.units import format_bytes as fmt

MIB = 1024 * 1024
OUTSIDE_SHARE = 0.10  # of the device: below this, memory outside PyTorch is not the story
CONTEXT_ALLOWANCE = 1024 * MIB  # a CUDA context with library handles; unavoidable, so never blamed
DRIVER_ALLOWANCE = 768 * MIB  # the driver's own reservation, when NVML cannot tell it apart
GROWING_SHARE = 0.30  # growing lines must hold this much of the live bytes to call it retained references
CACHE_RATIO = 1.5
CACHE_GAP = 256 * MIB


@dataclass
class RunFacts:
    """What the classification needs beyond the accounting."""

    outcome: str
    peak_allocated: int
    peak_reserved: int
    end_allocated: int
    end_reserved: int
    oom_count: int = 0
    oldest_live_fraction: dict | None = None  # line -> position of its oldest live block in the history (0..1)
    status: str = "completed"  # capture.json status, or "snapshot" for a raw pickle
    no_oom_sentence: str = "The run completed without an OOM"  # how a run without an OOM ended, honestly
    backward_seen: bool = True  # False only when the trace shows no backward pass at all

    @property
    def mid_run(self) -> bool:
        return taken_mid_run(self.status)


def effective_limit(acc: Accounting) -> int | None:
    """What PyTorch could have reserved: the cap when it binds, else the device minus what others hold."""
    if acc.limit is None:
        return None
    if acc.limit_is_cap or acc.non_pytorch is None:
        return acc.limit
    return min(acc.limit, (acc.device_total or acc.limit) - acc.non_pytorch)


def _cap_bound(acc: Accounting) -> bool:
    return acc.limit_is_cap and acc.limit is not None and acc.request is not None and acc.reserved + acc.request > acc.limit


def avoidable_outside(acc: Accounting) -> int | None:
    """Memory outside PyTorch that could have been someone else's to give back: other processes, and
    this process's share beyond what a CUDA context (with cuBLAS/cuDNN handles) normally takes.
    The driver's own reservation (used, but owned by no process) is never avoidable."""
    if acc.non_pytorch is None:
        return None
    if acc.context_and_libraries is not None and acc.other_processes is not None:
        return acc.other_processes + max(acc.context_and_libraries - CONTEXT_ALLOWANCE, 0)
    return max(acc.non_pytorch - CONTEXT_ALLOWANCE - DRIVER_ALLOWANCE, 0)


def _outside_allocator(acc: Accounting) -> Diagnosis | None:
    if acc.request is None or acc.non_pytorch is None or _cap_bound(acc):
        return None
    total = acc.device_total or acc.limit
    avoidable = avoidable_outside(acc)
    if not total or avoidable < OUTSIDE_SHARE * total:
        return None
    free_now = acc.device_free if acc.device_free is not None else max(total - acc.reserved - acc.non_pytorch, 0)
    if free_now >= acc.request or free_now + avoidable < acc.request:
        return None  # either the driver had room (not this cause) or even without it the request would not fit
    # The driver's used, free and total come from one source (NVML's sample, or total − free at the
    # OOM), so the sentence adds up; torch's own total_memory is a little smaller than NVML's.
    driver_total = acc.driver_total or total
    driver_free = max(driver_total - acc.driver_used, 0) if acc.driver_used is not None else free_now
    evidence = [
        f"The driver saw {fmt(acc.driver_used)} in use and {fmt(driver_free)} free of the device's {fmt(driver_total)}; "
        f"PyTorch reserved only {fmt(acc.reserved)} of it.",
        f"{fmt(acc.non_pytorch)} ({acc.non_pytorch / driver_total:.0%} of the device) was held outside PyTorch's allocator.",
        f"The request of {fmt(acc.request)} met {fmt(driver_free)} free; without the memory held outside PyTorch it would have fit.",
    ]
    if acc.context_and_libraries is not None:
        evidence.append(
            f"This process held {fmt(acc.context_and_libraries)} outside PyTorch (CUDA context and other libraries); "
            f"other processes held {fmt(acc.other_processes)}."
        )
    confidence = 0.9 if acc.context_and_libraries is not None or acc.device_free is not None else 0.7
    return Diagnosis("outside_allocator", confidence, evidence)


def _fragmentation(acc: Accounting) -> Diagnosis | None:
    if acc.request is None or acc.largest_free_block is None:
        return None
    if acc.cached < acc.request or acc.largest_free_block >= acc.request:
        return None
    pool = acc.largest_free_pool or "large"
    evidence = [
        f"PyTorch had {fmt(acc.cached)} reserved but free (reserved {fmt(acc.reserved)} − allocated {fmt(acc.allocated)}), "
        f"more than the {fmt(acc.request)} request.",
        f"The largest free block in the {pool} pool was only {fmt(acc.largest_free_block)}, so no block could hold the request.",
    ]
    limit = effective_limit(acc)
    if limit is not None:
        evidence.append(
            f"Packed tightly, allocated {fmt(acc.allocated)} + request {fmt(acc.request)} = "
            f"{fmt(acc.allocated + acc.request)} would have fit under the {fmt(limit)} limit."
        )
    confidence = 0.85 if acc.cached >= 1.25 * acc.request else 0.65
    return Diagnosis("fragmentation", confidence, evidence)


def _growing(lines: list[LineStat]) -> list[LineStat]:
    return [line for line in lines if line.growing and line.live_bytes > 0]


def _retained(lines: list[LineStat], facts: RunFacts, moment: str) -> Diagnosis | None:
    """``moment``: "oom" or "peak"."""
    growing = _growing(lines)
    held = sum(line.share for line in growing)
    if not growing or held < GROWING_SHARE:
        return None
    top = max(growing, key=lambda line: line.live_bytes)
    when = moment_words(moment, facts.status)
    evidence = [
        f"{len(growing)} line(s) kept growing from iteration to iteration and held {held:.0%} of the live bytes {when}.",
        f"{top.label} rose by {fmt(top.growth_bytes)} across the run and held {fmt(top.live_bytes)} "
        f"in {top.live_blocks} block(s) {when}.",
    ]
    oldest = (facts.oldest_live_fraction or {}).get((top.path, top.line))
    if oldest is not None:
        evidence.append(
            f"Its oldest block still live was allocated {oldest:.0%} of the way into the recorded history: "
            "allocations from earlier iterations were never released."
        )
    if not facts.backward_seen:
        evidence.append("No backward pass ran in the recorded history (no allocation by the autograd engine): "
                        "this is inference, yet with grad mode on every kept output holds its autograd graph.")
    return Diagnosis("retained_references", min(0.95, 0.55 + 0.4 * held), evidence)


def _working_set(acc: Accounting, lines: list[LineStat]) -> Diagnosis:
    limit = effective_limit(acc)
    evidence = []
    confidence = 0.6
    if acc.request is not None and limit is not None:
        need = acc.allocated + acc.request
        evidence.append(
            f"Live tensors held {fmt(acc.allocated)}; with the {fmt(acc.request)} request that is {fmt(need)}, "
            f"against a limit of {fmt(limit)}{' (a fraction cap)' if acc.limit_is_cap else ''}."
        )
        if need > limit:
            evidence.append(f"Even perfectly packed, this one allocation was {fmt(need - limit)} over the limit; "
                            "that is the shortfall for the failing allocation alone, and the rest of the step "
                            "will likely need more.")
            confidence = 0.85
        else:
            evidence.append(
                f"Free reserved memory ({fmt(acc.cached)}) was smaller than the request, so the cache could not serve it."
            )
    if acc.largest_free_block is not None and acc.request is not None:
        evidence.append(f"The largest free block in PyTorch's cache was {fmt(acc.largest_free_block)}.")
    user_lines = [line for line in lines if line.live_bytes > 0][:3]
    if user_lines:
        evidence.append(
            "Most live bytes came from " + ", ".join(f"{l.label} ({fmt(l.live_bytes)}, {l.share:.0%})" for l in user_lines) + "."
        )
    return Diagnosis("working_set", confidence, evidence)


def _completed(acc: Accounting, lines: list[LineStat], facts: RunFacts) -> Diagnosis:
    retained = _retained(lines, facts, "peak")
    upto = " up to the moment the snapshot was taken" if facts.mid_run else ""
    then = "When the snapshot was taken" if facts.mid_run else "At the end"
    if retained:
        retained.confidence = min(retained.confidence, 0.8)
        return retained
    reserved = max(facts.peak_reserved, facts.end_reserved)
    gap = reserved - facts.peak_allocated
    if reserved >= CACHE_RATIO * max(facts.peak_allocated, 1) and gap >= CACHE_GAP:
        return Diagnosis("cached_not_leak", 0.8, [
            f"{facts.no_oom_sentence}.",
            f"PyTorch reserved up to {fmt(reserved)} while live tensors never exceeded {fmt(facts.peak_allocated)}{upto}.",
            f"The {fmt(gap)} difference is the caching allocator keeping freed blocks for reuse, not a leak.",
            f"{then} {fmt(facts.end_allocated)} was allocated and {fmt(facts.end_reserved)} reserved; nothing kept growing.",
        ])
    evidence = [
        f"{facts.no_oom_sentence}; live tensors peaked at {fmt(facts.peak_allocated)} and PyTorch reserved at most "
        f"{fmt(reserved)}{upto}.",
        "No line kept growing across the run.",
    ]
    if acc.limit:
        share = facts.peak_allocated / acc.limit
        evidence.append(f"The peak used {'under 1%' if 0 < share < 0.01 else f'{share:.0%}'} of the {fmt(acc.limit)} limit.")
    if facts.end_reserved - facts.end_allocated >= CACHE_GAP:
        evidence.append(
            f"{then} {fmt(facts.end_reserved)} was reserved but only {fmt(facts.end_allocated)} allocated: "
            "memory kept in PyTorch's cache after the peak, for reuse, not leaked."
        )
    return Diagnosis("no_problem", 0.7, evidence)


def diagnose(acc: Accounting, lines: list[LineStat], facts: RunFacts) -> Diagnosis:
    if facts.outcome != "oom":
        return _completed(acc, lines, facts)
    diagnosis = _outside_allocator(acc) or _fragmentation(acc) or _retained(lines, facts, "oom") or _working_set(acc, lines)
    if facts.oom_count > 1:
        diagnosis.evidence.append(f"The run hit {facts.oom_count} OOMs; this diagnosis is about the first.")
    return diagnosis
