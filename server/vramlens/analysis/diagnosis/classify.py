"""Classify the run and say why, with numbers.

Causes: working_set, retained_references, fragmentation, outside_allocator (OOM runs);
cached_not_leak, retained_references, no_problem (completed runs). Confidence is 0–1
(high ≥ 0.75, medium ≥ 0.5, low below; docs/analysis-json.md says how each is set).

The order of the questions is the order of the evidence's strength:
1. memory outside PyTorch that, given back, would have let the request fit;
2. growth across steps (analysis/attribution/growth.py): when the floor between steps keeps
   rising and, even perfectly packed, the live set passes the limit soon, the growth is the
   cause — kept outputs (retained references) or a cache growing as designed (working set) —
   and a split cache at most decided which request failed. A cache grows as designed only outside
   training (analysis/diagnosis/cache_growth.py); a container keeping the results of an outer loop
   the recorded steps cannot show is growth too (analysis/diagnosis/kept_calls.py);
3. fragmentation by the request's real chances: live + request fit the limit, yet neither the
   largest free block of the request's pool and stream nor the unreserved headroom could hold
   it. A large reserved − allocated gap alone is never fragmentation, nor is a first forward pass
   still saving activations at the very limit (analysis/diagnosis/forward_growing.py);
4. otherwise the live working set of one step is too large.
Where two causes are close, the runner-up is named and the experiment that separates them is
proposed (``Diagnosis.confirm``, built in analysis/diagnosis/confirm.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vramlens.analysis.attribution.growth import Growth
from vramlens.analysis.diagnosis.cache_growth import cache_as_designed, training_cache_sentence
from vramlens.analysis.diagnosis.forward_growing import first_pass_without_room, forward_still_growing, packed_room_sentence
from vramlens.analysis.diagnosis.kept_calls import kept_across_calls
from vramlens.analysis.load.ending import moment_words, taken_mid_run
from vramlens.analysis.load.sources import place_of, short_path
from vramlens.analysis.model import Accounting, Diagnosis, LineStat, StepModel
from vramlens.units import format_bytes as fmt
from vramlens.units import count_of

MIB = 1024 * 1024
OUTSIDE_SHARE = 0.10  # of the device: below this, memory outside PyTorch is not the story
CONTEXT_ALLOWANCE = 1024 * MIB  # a CUDA context with library handles; unavoidable, so never blamed
DRIVER_ALLOWANCE = 768 * MIB  # the driver's own reservation, when NVML cannot tell it apart
CLOSE_TO_LIMIT = 0.90  # packed need within 10 % of the limit: fragmentation and working set are close
CACHE_RATIO = 1.5
END_CACHE_RATIO = 2.0  # judged on the end state alone, the cache must be at least what is still live
END_CACHE_GAP = 1024 * MIB  # ...and gigabytes: what makes someone look at nvidia-smi after the run
LEAK_SHARE = 0.25  # a completed run whose oldest survivors are this share of what is live is leaking
CACHE_GAP = 256 * MIB
GROWTH_SHARE_COMPLETED = 0.10  # a completed run's growth must reach this share of the limit to be a leak
LEAK_RISE_OF_PEAK = 0.5  # ...or rise, step after step, to this share of the run's peak
LEAK_MIN_INTERVALS = 3  # ...over at least this many step-to-step changes


@dataclass
class RunFacts:
    """What the classification needs beyond the accounting."""

    outcome: str
    peak_allocated: int
    peak_reserved: int
    end_allocated: int
    end_reserved: int
    oom_count: int = 0
    status: str = "completed"  # capture.json status, or "snapshot" for a raw pickle
    no_oom_sentence: str = "The run completed without an OOM"  # how a run without an OOM ended, honestly
    steps: StepModel | None = None
    growth: Growth | None = None
    mode: str | None = None  # "training" | "inference" | None
    grad_enabled: bool | None = None  # grad mode at the moment (from the census), None when not recorded
    census: object | None = None  # attribution/roles.py Census: roles and holders at the moment
    storing: list = field(default_factory=list)  # analysis/attribution/storing.py: the lines that keep the memory
    sources: object | None = None  # analysis/attribution/storing.py SourceFacts: the user's files, parsed once
    cells: object | None = None  # load.notebook's NotebookFacts of a notebook run (its cells' made-up file names), else None

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


def packed_need(acc: Accounting) -> int | None:
    return None if acc.request is None else acc.allocated + acc.request


def pending_need(acc: Accounting, facts: RunFacts | None) -> int:
    """What the step was still going to allocate that is known for sure: optimizer state under way."""
    census = getattr(facts, "census", None) if facts is not None else None
    return census.pending_state if census is not None else 0


def _fragmentation(acc: Accounting, facts: RunFacts | None = None) -> Diagnosis | None:
    """The request could have fitted packed, yet no piece of memory could hold it — unless the step
    was going to need more than the limit anyway (its optimizer state half made)."""
    limit = effective_limit(acc)
    need = packed_need(acc)
    if need is None or limit is None or acc.largest_free_block is None or need > limit:
        return None
    if acc.allocated + max(pending_need(acc, facts), acc.request) > limit:
        return None
    headroom = max(limit - acc.reserved, 0)
    if acc.largest_free_block >= acc.request or headroom >= acc.request:
        return None
    pool = acc.largest_free_pool or "large"
    evidence = [
        f"Packed tightly, allocated {fmt(acc.allocated)} + request {fmt(acc.request)} = {fmt(need)} would have fit "
        f"under the {fmt(limit)} limit.",
        f"But no piece of memory could hold the {fmt(acc.request)} request: the largest free block in the {pool} pool "
        f"was {fmt(acc.largest_free_block)} and only {fmt(headroom)} of the limit was left unreserved.",
    ]
    if acc.split_segments:
        evidence.append(
            f"{fmt(acc.split_free)} lay free inside {count_of(acc.split_segments, 'segment')} that also held live blocks: the "
            "allocator can give a segment back to the driver only when all of it is free, so that memory was "
            "stranded in pieces."
        )
    # close: so near the limit, or (a first pass) with less room packed than one more such request, that the
    # rest of the step may not fit either
    close = need >= CLOSE_TO_LIMIT * limit or (
        facts is not None and first_pass_without_room(acc.allocated, acc.request, limit, facts) is not None)
    diagnosis = Diagnosis("fragmentation", 0.55 if close else 0.8, evidence)
    if close:
        diagnosis.alternative = "working_set"
        evidence.append(f"The packed need was {need / limit:.0%} of the limit: so close that the rest of the step may "
                        "not fit either; measure before choosing the fix.")
    return diagnosis


def _step_sentence(steps: StepModel | None) -> str | None:
    if steps is None or not steps.steps:
        return None
    done = steps.completed
    return (f"The run went through {count_of(len(steps.steps), 'iteration')} of the loop at {steps.driver} "
            f"({done} completed).")


def _growth_diagnosis(acc: Accounting, facts: RunFacts, frag: Diagnosis | None) -> Diagnosis | None:
    growth = facts.growth
    if growth is None:
        return None
    limit = effective_limit(acc)
    if frag is not None and not growth.soon(limit):
        return None  # growth too slow to explain this OOM: the split cache did
    when = moment_words(acc.moment, facts.status)
    evidence = [
        f"The live floor between steps rose by {fmt(growth.rise)} over {count_of(growth.intervals, 'step')}, "
        f"{fmt(growth.rate)} per step on average.",
    ]
    left = growth.steps_left(limit)
    if left is not None and limit is not None and growth.soon(limit):
        if left == 0:
            evidence.append(f"Even perfectly packed, the floor ({fmt(growth.floor)}) plus one step's own working set "
                            f"({fmt(growth.excess)}) had reached the {fmt(limit)} limit.")
        else:
            evidence.append(f"Even perfectly packed, the growth alone takes the live set past the {fmt(limit)} limit "
                            f"within {count_of(left, 'more step', 'more steps')} at this rate.")
    top = growth.carriers[:3]
    if top:
        evidence.append("What carries the growth " + when + ": " +
                        ", ".join(f"{_key_label(key, facts)} ({fmt(size)})" for key, size in top) + ".")
    inner = [(site, size) for site, size in growth.sites[:3] if (site[0], site[1]) not in dict(growth.carriers)]
    if inner:
        evidence.append("Allocated inside: " + ", ".join(f"{_site_label(site)} ({fmt(size)})" for site, size in inner) + ".")
    if frag is not None:
        evidence.append(f"The failing request also met a split cache (largest free block {fmt(acc.largest_free_block)}), "
                        "but that only decided which request failed: an allocator setting would not stop the growth.")
    holder = _growth_holder(facts)
    if holder is not None:
        evidence.append(_holder_sentence(holder, facts))
    if cache_as_designed(growth, facts.mode):
        steps_done = facts.steps.completed if facts.steps is not None else growth.steps_done
        evidence.insert(0, f"KV cache (a cache growing as designed): +{fmt(growth.rate)} per step, "
                           f"{fmt(growth.cache)} of it live {when} after {count_of(steps_done, 'step')}; it was allocated by "
                           "cache code, so this is the working set of the generation, not a leak.")
        if limit is not None and growth.rate > 0:
            evidence.append(f"Packed, the {fmt(limit)} limit holds about {max(int((limit - growth.excess) // growth.rate), 0)} "
                            "steps of this growth from an empty cache; more tokens or sequences need a smaller cache per step.")
        confidence = 0.8 if growth.intervals >= 3 else 0.6
        return Diagnosis("working_set", confidence, evidence, alternative=None if growth.intervals >= 3 else "retained_references")
    not_designed = training_cache_sentence(growth, facts.mode)
    if not_designed:
        evidence.insert(0, not_designed)
    if growth.old:
        evidence.append(f"{fmt(growth.old)} still live was allocated two or more steps before the moment: earlier "
                        "iterations' tensors were never released.")
    else:
        evidence.append("Each step replaced a growing buffer with a larger one (the survivors come from the step before), "
                        "as concatenating outputs across steps does.")
    confidence = min(0.9, 0.55 + 0.1 * growth.intervals)
    alternative = None if growth.intervals >= 3 else "working_set"
    return Diagnosis("retained_references", confidence, evidence, alternative=alternative)


def _growth_holder(facts: RunFacts):
    """The census' largest holder that is not the library's cache: what keeps the growth alive."""
    census = facts.census
    if census is None:
        return None
    return next((holder for holder in census.holders if holder.kind not in ("cache",) and not holder.working_set
                 and holder.bytes + holder.graph_bytes >= MIB), None)


def _holder_sentence(holder, facts: RunFacts | None = None) -> str:
    where = f", stored into at {_key_label(holder.stored_at, facts)}" if holder.stored_at else ""
    where += f", what it keeps allocated at {_key_label(holder.appended_at, facts)}" if holder.appended_at else ""
    graphs = (f"; their autograd graphs keep {fmt(holder.graph_bytes)} more alive (saved activations made at that "
              "line that no Python object names)") if holder.graph_bytes else ""
    return (f"Held by {holder.root} ({holder.container_words}, {count_of(holder.tensors, 'tensor')}, {fmt(holder.bytes)})"
            f"{where}{graphs}.")


def roles_evidence(facts: RunFacts, moment: str) -> str | None:
    census = facts.census
    if census is None or not census.roles:
        return None
    when = {"oom": "At the OOM", "end": "At the end", "peak": "Near the peak", "on_demand": "When the snapshot was taken"}
    parts = ", ".join(f"{share.label} {fmt(share.bytes)}" for share in census.roles[:5])
    return f"{when.get(census.moment, 'Then')}, the live memory was: {parts}."


def _site_label(site: tuple) -> str:
    filename, line, function = site
    return f"{short_path(str(filename))}:{line} {function}"


def _key_label(key, facts: RunFacts | None = None) -> str:
    path, line = key
    if path is None:
        return {0: "allocations with no Python frame", 1: "library code", 2: "blocks from before the trace"}.get(line, "?")
    return place_of(str(path), line, facts.cells if facts is not None else None)  # a cell by its place, not its temp file


def _working_set(acc: Accounting, lines: list[LineStat], facts: RunFacts, growing: list[str] | None = None) -> Diagnosis:
    """``growing``: the evidence that a split cache met a first forward pass still growing (forward_growing.py)."""
    limit = effective_limit(acc)
    evidence = []
    block_said = False
    confidence = 0.6
    alternative = None
    need = packed_need(acc)
    if need is not None and limit is not None:
        evidence.append(
            f"Live tensors held {fmt(acc.allocated)}; with the {fmt(acc.request)} request that is {fmt(need)}, "
            f"against a limit of {fmt(limit)}{' (a fraction cap)' if acc.limit_is_cap else ''}."
        )
        pending = pending_need(acc, facts)
        if need > limit:
            evidence.append(f"Even perfectly packed, this one allocation was {fmt(need - limit)} over the limit; "
                            "that is the shortfall for the failing allocation alone, and the rest of the step "
                            "will likely need more.")
            confidence = 0.85
        elif acc.allocated + pending > limit:
            evidence.append(f"{facts.census.pending_words}; with the rest of it the live set reaches "
                            f"{fmt(acc.allocated + pending)}, past the {fmt(limit)} limit even perfectly packed: the "
                            "allocator's layout only decided which request failed first.")
            confidence = 0.8
        elif growing:
            headroom = max(limit - acc.reserved, 0)
            evidence.append(f"The request would have fit packed ({need / limit:.0%} of the limit), but no free piece could "
                            f"hold it: the largest free block was {fmt(acc.largest_free_block)} and {fmt(headroom)} was left "
                            "unreserved.")
            evidence += growing
            room = packed_room_sentence(limit, need, acc.request)
            if room and not any(room in sentence for sentence in growing):
                evidence.append(room)
            evidence.append("The allocator's layout only decided which request of that pass failed first.")
            block_said = True
            confidence = 0.6
            alternative = "fragmentation"
        else:
            block_said = True
            headroom = max(limit - acc.reserved, 0)
            evidence.append(
                f"The request would have fit packed, and the memory could serve it in one piece "
                f"(largest free block {fmt(acc.largest_free_block)}, {fmt(headroom)} unreserved), yet it failed: "
                "the device itself may have had less free than the limit says."
            )
            confidence = 0.5
            alternative = "outside_allocator"
    steps = facts.steps
    if growing:
        pass  # its evidence already said that no step had completed
    elif steps is None or not steps.completed:
        evidence.append("The OOM came in the first iteration (no step had completed): what failed is the working set of "
                        "one step, not something kept from earlier steps.")
    else:
        sentence = _step_sentence(steps)
        if sentence:
            evidence.append(sentence + " The floor between steps did not keep rising, so nothing accumulated across them.")
        if steps.completed < 3 and confidence > 0.7:
            confidence = 0.7
            alternative = alternative or "retained_references"
    if acc.largest_free_block is not None and acc.request is not None and not block_said:
        evidence.append(f"The largest free block in PyTorch's cache was {fmt(acc.largest_free_block)}.")
    user_lines = [line for line in lines if line.live_bytes > 0][:3]
    if user_lines:
        evidence.append(
            "Most live bytes came from " + ", ".join(f"{l.label} ({fmt(l.live_bytes)}, {l.share:.0%})" for l in user_lines) + "."
        )
    roles = roles_evidence(facts, acc.moment)
    if roles:
        evidence.append(roles)
    kept = _growth_holder(facts)
    if kept is not None and kept.graph_bytes >= 0.2 * max(acc.allocated, 1):
        evidence.append(_holder_sentence(kept, facts) + " Dropping those graphs (.item(), .detach()) frees that memory.")
    copy = _weights_copy(facts)
    if copy is not None:
        evidence.append(f"{copy.root} held {fmt(copy.bytes)} in {count_of(copy.tensors, 'tensor')} shaped like {copy.copy_of}'s "
                        "parameters: a second copy of the weights on the GPU (e.g. a checkpoint loaded onto the device).")
    return Diagnosis("working_set", confidence, evidence, alternative=alternative)


def _weights_copy(facts: RunFacts):
    census = facts.census
    return next((holder for holder in (census.holders if census else ()) if holder.copy_of), None)


def _completed(acc: Accounting, lines: list[LineStat], facts: RunFacts) -> Diagnosis:
    upto = " up to the moment the snapshot was taken" if facts.mid_run else ""
    then = "When the snapshot was taken" if facts.mid_run else "At the end"
    growth = facts.growth
    limit = acc.limit
    leaking = growth is not None and not cache_as_designed(growth, facts.mode) and (
        (limit and growth.rise >= GROWTH_SHARE_COMPLETED * limit) or growth.old >= LEAK_SHARE * max(facts.end_allocated, 1)
        # Growth across steps is retention whether or not the run reached the limit: a floor that rose
        # step after step to most of the peak would run out of any card given more steps.
        or (growth.intervals >= LEAK_MIN_INTERVALS and growth.rise >= LEAK_RISE_OF_PEAK * max(facts.peak_allocated, 1)))
    if leaking:
        left = growth.steps_left(limit)
        evidence = [
            f"{facts.no_oom_sentence}, but the live floor between steps rose by {fmt(growth.rise)} over "
            f"{count_of(growth.intervals, 'step')} ({fmt(growth.rate)} per step){upto}: it will run out of memory given more "
            "steps or a smaller card.",
        ]
        if growth.carriers:
            when = " at the peak" if growth.at_peak else ""
            evidence.append(f"What carries it{when}: " +
                            ", ".join(f"{_key_label(key, facts)} ({fmt(size)})" for key, size in growth.carriers[:3]) + ".")
        if left is not None:
            evidence.append(f"At this rate the live set passes the {fmt(limit)} limit within "
                            f"{count_of(left, 'more step', 'more steps')}: projected to run out at step {growth.steps_done + left + 1}.")
        evidence += _storing_evidence(facts)
        return Diagnosis("retained_references", 0.7, evidence, alternative="no_problem")
    kept = _graphs_near_limit(facts, limit)
    if kept is not None:
        evidence = [f"{facts.no_oom_sentence}, but its peak ({fmt(facts.peak_allocated)}) came within "
                    f"{1 - facts.peak_allocated / limit:.0%} of the {fmt(limit)} limit, and "
                    f"{_holder_sentence(kept)[0].lower()}{_holder_sentence(kept)[1:]}",
                    "One more kept batch would run out of memory."] + _storing_evidence(facts)
        return Diagnosis("retained_references", 0.65, evidence, alternative="no_problem")
    peak_gap = max(facts.peak_reserved, facts.end_reserved) - facts.peak_allocated
    end_gap = facts.end_reserved - facts.end_allocated
    end_cache = end_gap >= END_CACHE_GAP and facts.end_reserved >= END_CACHE_RATIO * max(facts.end_allocated, 1)
    peak_cache = (max(facts.peak_reserved, facts.end_reserved) >= CACHE_RATIO * max(facts.peak_allocated, 1)
                  and peak_gap >= END_CACHE_GAP)
    notes = []
    if cache_as_designed(growth, facts.mode):
        notes.append(f"A cache grew by {fmt(growth.rate)} per step as designed (e.g. a KV cache) and was released.")
    if end_cache or peak_cache:
        evidence = [f"{facts.no_oom_sentence}."]
        if end_cache:
            evidence.append(f"{then} {fmt(facts.end_reserved)} was reserved while only {fmt(facts.end_allocated)} was "
                            f"allocated: the {fmt(end_gap)} difference is what nvidia-smi shows as used.")
        if peak_cache:
            evidence.append(f"PyTorch reserved up to {fmt(max(facts.peak_reserved, facts.end_reserved))} while live tensors "
                            f"never exceeded {fmt(facts.peak_allocated)}{upto}.")
        evidence.append("That memory is the caching allocator keeping freed blocks for reuse, not a leak: nothing kept "
                        "growing across the run.")
        return Diagnosis("cached_not_leak", 0.8, evidence + notes)
    reserved = max(facts.peak_reserved, facts.end_reserved)
    evidence = [
        f"{facts.no_oom_sentence}; live tensors peaked at {fmt(facts.peak_allocated)} and PyTorch reserved at most "
        f"{fmt(reserved)}{upto}.",
        "Nothing accumulated across steps." if facts.steps is not None else "No recurring loop kept more memory over time.",
    ]
    if acc.limit:
        share = facts.peak_allocated / acc.limit
        evidence.append(f"The peak used {'under 1%' if 0 < share < 0.01 else f'{share:.0%}'} of the {fmt(acc.limit)} limit.")
    return Diagnosis("no_problem", 0.7, evidence + notes)


def _graphs_near_limit(facts: RunFacts, limit: int | None):
    """A holder whose kept outputs' graphs hold at least half of a peak within 10 % of the limit."""
    census = facts.census
    if census is None or not limit or facts.peak_allocated < CLOSE_TO_LIMIT * limit:
        return None
    return next((holder for holder in census.holders if holder.kind != "cache" and (holder.with_graph or 0) >= 2
                 and holder.bytes + holder.graph_bytes >= 0.5 * facts.peak_allocated), None)


def _storing_evidence(facts: RunFacts) -> list[str]:
    storing = facts.storing[0] if facts.storing else None
    if storing is None:
        return []
    return [f"The line that keeps it: {storing.label} stores into {storing.target}"
            + (f" what {_key_label(storing.allocated_at, facts)} allocated" if storing.allocated_at else "") + "."]


def classify(acc: Accounting, lines: list[LineStat], facts: RunFacts) -> Diagnosis:
    """The cause the numbers point to, with its evidence, before any measurement or what else is known."""
    if facts.outcome != "oom":
        return _completed(acc, lines, facts)
    outside = _outside_allocator(acc)
    if outside is not None:
        diagnosis = outside
    else:
        frag = _fragmentation(acc, facts)
        limit = effective_limit(acc)
        # At the limit, a first forward pass still saving activations needs more than packing gives back.
        growing = (forward_still_growing(acc.allocated, facts) or first_pass_without_room(acc.allocated, acc.request, limit, facts)
                   if frag is not None and frag.alternative == "working_set" else None)
        diagnosis = (_growth_diagnosis(acc, facts, frag)
                     or kept_across_calls(acc.allocated, acc.request, limit, facts,
                                          acc.largest_free_block if frag is not None else None)
                     or (None if growing else frag) or _working_set(acc, lines, facts, growing))
        if diagnosis.cause == "fragmentation" and facts.growth is not None:
            diagnosis.evidence.append(
                f"The floor between steps also rose by {fmt(facts.growth.rate)} per step, too slowly to explain this OOM "
                "by itself; it will matter later.")
    if facts.oom_count > 1:
        diagnosis.evidence.append(f"The run hit {facts.oom_count} OOMs; this diagnosis is about the last.")
    return diagnosis
