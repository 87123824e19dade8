"""Which user line held the most live bytes at given moments of the trace (the timeline's hover).

One light pass over the trace after the analysis: each allocation is charged to its innermost
frame that the analysis counted as a user line, each free takes it back. Blocks from before the
recorded history have no frames here and are left out, so the answer is the top line among the
bytes the trace itself allocated.
"""

from __future__ import annotations


from vramlens.analysis.model import LineHistory, LineStat

# Past this many entries the pass would add seconds to a load: the timeline then shows no top line.
MAX_ENTRIES = 300_000


def top_lines_at(trace: list, lines: list[LineStat], indices: list[int]) -> list[tuple[str, int] | None]:
    """For each trace index (ascending), the (label, live bytes) of the user line holding most, or None."""
    return line_history(trace, lines, indices, []).tops


def line_history(trace: list, lines: list[LineStat], indices: list[int], step_ends: list[int]) -> LineHistory:
    """The top line at each of ``indices`` and, per user line, its live bytes at each of ``step_ends``
    (trace positions, ascending) and its peak."""
    if len(trace) > MAX_ENTRIES:
        return LineHistory([None] * len(indices))
    labels = {(line.path, line.line): line.label for line in lines if line.path is not None and line.line}
    live: dict[tuple, int] = {}
    peaks: dict[tuple, int] = {}
    blocks: dict[int, tuple[tuple, int]] = {}
    answers: list[tuple[str, int] | None] = []
    samples: list[dict] = []
    wanted, ends = iter(indices), iter(step_ends)
    target, end = next(wanted, None), next(ends, None)
    for position, entry in enumerate(trace):
        if target is None and end is None:
            break
        action = entry.get("action")
        if action == "alloc":
            key = _user_key(entry.get("frames"), labels)
            if key is not None:
                size = entry.get("size", 0)
                held = live[key] = live.get(key, 0) + size
                if held > peaks.get(key, 0):
                    peaks[key] = held
                blocks[entry.get("addr")] = (key, size)
        elif action == "free_completed":
            held = blocks.pop(entry.get("addr"), None)
            if held is not None:
                live[held[0]] -= held[1]
        while target is not None and position >= target:
            answers.append(_top(live, labels))
            target = next(wanted, None)
        while end is not None and position >= end:
            samples.append(dict(live))
            end = next(ends, None)
    while len(answers) < len(indices):
        answers.append(_top(live, labels))
    while len(samples) < len(step_ends):
        samples.append(dict(live))
    at_steps = {key: [max(sample.get(key, 0), 0) for sample in samples] for key in labels} if samples else {}
    return LineHistory(answers, at_steps, peaks)


def _user_key(frames, labels: dict) -> tuple | None:
    for frame in frames or ():
        key = (frame.get("filename"), frame.get("line"))
        if key in labels:
            return key
    return None


def _top(live: dict, labels: dict) -> tuple[str, int] | None:
    if not live:
        return None
    key = max(live, key=live.__getitem__)
    return (labels[key], live[key]) if live[key] > 0 else None
