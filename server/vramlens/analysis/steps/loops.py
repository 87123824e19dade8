"""Find the loop that drives the work: the recurring sequence of call paths around the moment.

Walking inward from the outermost frame along the path of the moment that matters (the OOM, or
the peak), at each depth where the allocations' frames start to differ, their frames at that
depth form runs (consecutive allocations at the same line). A loop shows as a line whose runs
recur with the same company each time: that line starts every iteration. The innermost such
loop on the moment's path wins (a validation loop inside a training epoch, a decoding loop
inside generate). The walk never enters torch's own code: the layers of one forward pass, an
optimizer's loop over parameters or a model built in a loop are one call, not iterations.

Allocations without a Python frame (backward on the autograd thread) belong to the run they
interrupt, so a backward pass never splits a step.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from bisect import bisect_left
from itertools import compress, groupby

from vramlens.analysis.steps.paths import CallPaths

LEAF = -1  # the allocation was made by the enclosing line itself, not deeper
MIN_STEP_ALLOCS = 2  # iterations of one allocation are a detail (a loop over a tuple of tensors), not steps
MIN_CONSISTENCY = 0.5


@dataclass
class Loop:
    """A recurring loop found in the allocations: where its iterations start and where it ends."""

    depth: int
    anchor: int  # the token whose runs start the iterations
    starts: list[int]  # allocation ordinals where iterations begin
    end: int  # allocation ordinal where the loop's region ends (exclusive)
    parent: int | None  # token of the frame that holds the loop (None: the script's top level)


class _Run:
    __slots__ = ("token", "start", "end")

    def __init__(self, token: int, start: int, end: int):
        self.token, self.start, self.end = token, start, end  # end exclusive


def _token_at(path: tuple, depth: int) -> int:
    return path[depth] if len(path) > depth else LEAF


def _first_divergence(paths: list[tuple], depth: int) -> int | None:
    """The smallest depth ≥ ``depth`` at which the paths do not all have the same frame."""
    if not paths:
        return None
    shortest = min(len(path) for path in paths)
    first = paths[0]
    d = depth
    while d < shortest:
        token = first[d]
        if any(path[d] != token for path in paths):
            return d
        d += 1
    if all(len(path) == shortest for path in paths):
        return None  # all the same call path: nothing differs any more
    return d


def _runs(pids: list[int], framed: list[int], paths: list[tuple], lo: int, hi: int, depth: int) -> list[_Run]:
    """Runs of consecutive allocations at the same frame of this depth. ``framed``: the ordinals of
    allocations that have a Python frame; the others belong to the run they interrupt. The grouping
    itself runs in C (map + groupby); Python only sees one item per run."""
    token_of = [LEAF] + [_token_at(path, depth) for path in paths[1:]]
    first, last = bisect_left(framed, lo), bisect_left(framed, hi)
    runs: list[_Run] = []
    offset = first
    for token, group in groupby(map(token_of.__getitem__, map(pids.__getitem__, framed[first:last]))):
        length = len(list(group))
        runs.append(_Run(token, framed[offset], 0))
        offset += length
    for run, following in zip(runs, runs[1:]):
        run.end = following.start
    if runs:
        runs[0].start = lo
        runs[-1].end = hi
    return runs


def _consistency(runs: list[_Run], anchor: int, moment: int) -> tuple[float, list[int]]:
    """How alike the iterations that ``anchor`` would start are: the share of consecutive pairs whose
    recurring lines are the same set (lines seen in one iteration only, like first-step setup, are
    ignored). The iteration holding the moment may be cut short, so it is not compared."""
    segments: list[set] = []
    starts: list[int] = []
    for run in runs:
        if run.token == anchor:
            segments.append(set())
            starts.append(run.start)
        if segments:
            segments[-1].add(run.token)
    if len(starts) >= 2 and starts[-1] <= moment:
        compared = segments[:-1]
    else:
        compared = segments
    seen = Counter(token for segment in compared for token in segment)
    recurring = {token for token, count in seen.items() if count >= 2}
    sets = [segment & recurring for segment in compared]
    pairs = list(zip(sets, sets[1:]))
    if not pairs:
        return 0.0, starts
    return sum(1 for a, b in pairs if a == b) / len(pairs), starts


def _choose(runs: list[_Run], moment: int, end: int) -> tuple[int, list[int]] | None:
    counts = Counter(run.token for run in runs if run.token != LEAF)
    first_seen: dict[int, int] = {}
    for run in runs:
        first_seen.setdefault(run.token, run.start)
    best = None
    for token, count in counts.items():
        if count < 2:
            continue
        score, starts = _consistency(runs, token, moment)
        needed = 1.0 if len(starts) <= 3 else MIN_CONSISTENCY
        if score < needed:
            continue
        sizes = sorted(b - a for a, b in zip(starts, starts[1:] + [end]))
        if sizes[len(sizes) // 2] < MIN_STEP_ALLOCS:
            continue
        rank = (count, -first_seen[token])
        if best is None or rank > best[0]:
            best = (rank, token, starts)
    return None if best is None else (best[1], best[2])


def _run_at(runs: list[_Run], position: int) -> _Run | None:
    for run in runs:
        if run.start <= position < run.end:
            return run
    return None


def find_loop(pids: list[int], calls: CallPaths, moment: int) -> Loop | None:
    """``pids``: each allocation's path id, in order; ``moment``: the ordinal of the allocation
    (or failed request) the analysis is about."""
    paths = calls.paths
    framed = list(compress(range(len(pids)), pids))  # the positions of the allocations with a path
    lo, hi, depth = 0, len(pids), 0
    best: Loop | None = None
    while hi - lo >= 2:
        distinct = [paths[pid] for pid in set(pids[lo:hi]) if pid]
        divergence = _first_divergence(distinct, depth)
        if divergence is None:
            break
        prefix = distinct[0][:divergence]
        if any(calls.in_torch(token) for token in prefix[depth:]):
            break  # the common call entered torch: below here is one call's detail
        depth = divergence
        runs = _runs(pids, framed, paths, lo, hi, depth)
        chosen = _choose(runs, moment, hi)
        if chosen is not None:
            token, starts = chosen
            best = Loop(depth, token, starts, hi, prefix[-1] if prefix else None)
        run = _run_at(runs, moment)
        if run is None or run.token == LEAF or calls.in_torch(run.token):
            break
        lo, hi, depth = run.start, run.end, depth + 1
    return best
