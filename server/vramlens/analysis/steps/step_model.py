"""The step model: iterations with their floors and peaks, what survives from earlier steps at
the moment that matters, and how fast the floor between steps rises."""

from __future__ import annotations

import bisect

from dataclasses import dataclass

from vramlens.analysis.model import Step, StepModel
from vramlens.analysis.replay.trace import KEY, ReplayResult
from vramlens.analysis.steps.loops import find_loop
from vramlens.analysis.steps.paths import CallPaths

BACKWARD_FUNCTIONS = ("backward", "_engine_run_backward", "run_backward", "grad")


def _moment_ordinal(rep: ReplayResult, moment: str) -> int:
    """The allocation ordinal the analysis is about: the failed request, the peak, or the end."""
    log = rep.allocs
    if moment == "oom" and rep.oom_alloc_count is not None:
        return rep.oom_alloc_count  # the failed request sits right after the allocations before it
    if moment == "peak" and rep.peak_index is not None:
        return max(bisect.bisect_right(log.index, rep.peak_index) - 1, 0)
    return max(len(log) - 1, 0)


def _pids(rep: ReplayResult, calls: CallPaths, moment: str) -> list[int]:
    pids = calls.path_ids(rep.allocs.frames)
    if moment == "oom" and rep.oom_alloc_count is not None:
        pids.insert(rep.oom_alloc_count, calls.path_id(rep.oom_frames))  # the request that failed
    return pids


def _training_paths(calls: CallPaths) -> list[bool]:
    """Per path id: whether it shows training — no Python frame (the autograd engine's thread during
    backward), a backward call on the Python thread, or an optimizer."""
    training_token = [("/torch/optim/" in filename.replace("\\", "/"))
                      or ("/torch/autograd/" in filename.replace("\\", "/") and name in BACKWARD_FUNCTIONS)
                      for filename, _line, name in calls.frames]
    return [True] + [any(training_token[token] for token in path) for path in calls.paths[1:]]


def _kind(training: list[bool], pids: list[int], lo: int, hi: int) -> str:
    """"train" when the step ran a backward pass or an optimizer step; "step" otherwise."""
    return "train" if any(map(training.__getitem__, pids[lo:hi])) else "step"


@dataclass
class TraceFacts:
    """What the whole trace's call paths show about the kind of work."""

    backward_on_python_thread: bool  # torch.autograd.backward / grad frames on the Python thread
    frameless: bool  # allocations with no Python frame: the autograd engine's thread (or other C++ threads)
    optimizer: bool  # a torch.optim optimizer allocated


def _facts(calls: CallPaths, pids: list[int]) -> TraceFacts:
    backward = optimizer = False
    for filename, _line, name in calls.frames:
        normalized = filename.replace("\\", "/")
        optimizer = optimizer or "/torch/optim/" in normalized
        backward = backward or ("/torch/autograd/" in normalized and name in BACKWARD_FUNCTIONS)
    return TraceFacts(backward, 0 in pids, optimizer)


def build_step_model(rep: ReplayResult, trace: list, start_allocated: int, moment: str, outcome: str,
                     live_at_moment: dict) -> tuple[StepModel | None, TraceFacts | None]:
    """``live_at_moment``: addr -> (size, line accumulator, trace index) of the blocks live then."""
    log = rep.allocs
    if log is None or not len(log):
        return None, None
    calls = CallPaths()
    pids = _pids(rep, calls, moment)
    facts = _facts(calls, pids)
    at = _moment_ordinal(rep, moment)
    loop = find_loop(pids, calls, at) if len(log) >= 4 else None
    if loop is None:
        return None, facts
    inserted = moment == "oom" and rep.oom_alloc_count is not None

    def alloc_of(ordinal: int) -> int:
        """Position in the allocation log of a position in ``pids`` (which holds the failed request too)."""
        return ordinal - 1 if inserted and ordinal > rep.oom_alloc_count else ordinal

    def trace_index(ordinal: int) -> int:
        if inserted and ordinal == rep.oom_alloc_count:
            return rep.oom_index
        position = alloc_of(ordinal)
        return log.index[position] if position < len(log) else rep.entries

    steps: list[Step] = []
    training = _training_paths(calls)
    bounds = loop.starts + [loop.end]
    for number, (lo, hi) in enumerate(zip(bounds, bounds[1:]), 1):
        first, last = alloc_of(lo), alloc_of(hi)
        if first >= len(log):  # the failed request opened this step: nothing was allocated in it
            floor = peak = start_allocated + (log.after[-1] if len(log) else 0)
        else:
            floor = start_allocated + log.after[first] - log.size[first]
            peak = start_allocated + max(log.after[first:max(last, first + 1)])
        contains_moment = lo <= at < hi
        steps.append(Step(
            number=number, start_index=trace_index(lo), end_index=trace_index(hi) if hi < len(pids) else rep.entries,
            start_time_us=None, end_time_us=None, floor_allocated=floor, peak_allocated=peak,
            complete=not (contains_moment and outcome == "oom") and not (outcome == "oom" and lo > at),
            kind=_kind(training, pids, lo, hi),
        ))
    if outcome == "oom":
        steps = [step for step in steps if step.start_index <= (rep.oom_index if rep.oom_index is not None else rep.entries)]
    if outcome == "oom":
        current_start = next((step.start_index for step in steps if step.start_index <= trace_index(at) < step.end_index),
                             steps[-1].start_index if steps else None)
    else:  # a completed run is judged on its end: every step is behind it
        current_start = rep.entries
    anchor = calls.describe(loop.anchor)
    model = StepModel(steps=steps, driver=anchor, boundary=f"each iteration starts at {anchor}")
    if current_start is not None:
        _survivors(model, live_at_moment, current_start, trace, calls)
        model.growth_per_step = _growth(steps, current_start)
    return model, facts


def _survivors(model: StepModel, live: dict, current_start: int, trace: list, calls: CallPaths) -> None:
    """Bytes live at the moment that earlier steps allocated. Setup before the first step is not a
    step, and the first step creates what later ones reuse, so what carries growth is counted from
    the second step on; ``old`` is what is older than the step just before the moment's."""
    if not model.steps:
        return
    starts = [step.start_index for step in model.steps]
    first_start = starts[0]
    second_start = starts[1] if len(starts) > 1 else None
    previous_start = max((s for s in starts if s < current_start), default=None)
    total, from_steps = 0, set()
    # id of a frames list -> what it says, and the list (held so that its id stays its own); the loader
    # gives every entry of one stack the same list, so each stack is read once.
    read: dict = {}
    for address, (size, acc, index) in live.items():
        if not first_start <= index < current_start:
            continue
        total += size
        from_steps.add(bisect.bisect_right(starts, index))
        if second_start is None or index < second_start:
            continue
        frames = trace[index].get("frames")
        said = read.get(id(frames))
        if said is None:
            said = read[id(frames)] = (_made_by_setup(frames), _made_by_cache_code(frames, calls), _site(frames), frames)
        setup, cache, site, _ = said
        if setup:
            model.setup_survivors += size  # a model built or a checkpoint loaded in a loop: not growth
            continue
        key = acc[KEY]
        model.survivors_by_line[key] = model.survivors_by_line.get(key, 0) + size
        model.survivor_blocks[address] = size
        if previous_start is not None and index < previous_start:
            model.old_survivors += size
        if cache:
            model.cache_survivors += size
        if site is not None:
            model.survivor_sites[site] = model.survivor_sites.get(site, 0) + size
    model.survivors, model.survivor_steps = total, len(from_steps)


_SETUP_FUNCTIONS = {"__init__", "reset_parameters", "_apply", "to", "cuda", "to_empty", "_load_from_state_dict",
                    "load_state_dict", "register_buffer", "register_parameter"}


def _made_by_setup(frames: list | None) -> bool:
    """Whether a block was made by building a model or loading a checkpoint: parameters created in
    a module's constructor, moved by ``.to()`` / ``.cuda()``, or restored by ``torch.load``."""
    for frame in frames or ():
        filename = (frame.get("filename") or "").replace("\\", "/")
        if "-packages/torch/" not in filename:
            continue
        if filename.endswith("torch/serialization.py"):
            return True
        if "/torch/nn/modules/" in filename and (frame.get("name") or "") in _SETUP_FUNCTIONS:
            return True
    return False


def _site(frames: list | None) -> tuple | None:
    """(file, line, function) of the innermost frame outside torch's own package: where a library (or
    the user's code) asked for the block."""
    for frame in frames or ():
        filename = frame.get("filename") or "??"
        if filename == "??" or _in_torch(filename):
            continue
        return (filename, frame.get("line"), frame.get("name") or "?")
    return None


def _in_torch(filename: str) -> bool:
    normalized = filename.replace("\\", "/")
    return "-packages/torch/" in normalized or "/vramlens/agent/" in normalized


def _made_by_cache_code(frames: list | None, calls: CallPaths) -> bool:
    """Whether a block was allocated inside code that is a cache by its own name (a library's cache
    class or module, such as transformers' cache_utils / DynamicCache.update): growth there is
    the cache doing its job, not a leak."""
    for frame in frames or ():
        filename = (frame.get("filename") or "").replace("\\", "/")
        if filename == "??" or _in_torch(filename):
            continue
        base = filename.rsplit("/", 1)[-1].lower()
        if "cache" in base or "cache" in (frame.get("name") or "").lower():
            return True
    return False


def _growth(steps: list[Step], current_start: int) -> int | None:
    """Least-squares rise of the floor per step from the second step on (the first one creates
    what every later step reuses: optimizer state, gradients, compiled kernels' buffers)."""
    floors = [step.floor_allocated for step in steps[1:] if step.start_index <= current_start]
    if len(floors) < 2:
        return None
    n = len(floors)
    mean_x, mean_y = (n - 1) / 2, sum(floors) / n
    num = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(floors))
    den = sum((x - mean_x) ** 2 for x in range(n))
    return int(num / den)
