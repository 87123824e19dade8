"""Before and after a change: two analyses of the same program, compared.

What a user wants to know after changing a line: did the run get further (steps completed, OOM or
not), how much lower are the three peaks (allocated, reserved, driver-visible), did the cause go,
which lines and holders gave their bytes back, and how much of the growth across steps is gone.
Lines are matched by file and text where the text is known (an edit above moves line numbers), a
line whose own text changed by the place its unchanged neighbours moved to, else by file and number;
holders by their name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vramlens.analysis.model import Analysis
from vramlens.units import format_bytes as fmt

MIB = 1 << 20
MIN_DELTA = MIB  # smaller changes of one line or holder are noise


@dataclass
class Delta:
    label: str  # "train.py:20", "__main__.all_logits"
    before: int
    after: int
    growth_before: int = 0
    growth_after: int = 0
    source: str | None = None
    path: str | None = None
    line: int | None = None
    edited_from: str | None = None  # the line's text before, when the change edited the line itself

    @property
    def change(self) -> int:
        return self.after - self.before


@dataclass
class RunSide:
    outcome: str  # "oom" | "completed"
    cause: str
    peak_allocated: int
    peak_reserved: int
    peak_driver: int | None  # the highest driver-visible use NVML saw, None without samples
    steps: int | None  # iterations the trace shows
    completed: int | None
    growth: int | None  # how far the floor between steps rose from the second step on


@dataclass
class CaptureDiff:
    before: RunSide
    after: RunSide
    lines: list[Delta] = field(default_factory=list)  # largest change first
    holders: list[Delta] = field(default_factory=list)
    sentence: str = ""  # the verdict in one sentence
    notes: list[str] = field(default_factory=list)


def _peak_driver(meta: dict | None) -> int | None:
    samples = ((meta or {}).get("nvml") or {}).get("samples") or []
    used = [sample.get("device_used") for sample in samples if isinstance(sample, dict)]
    used = [value for value in used if type(value) is int]
    return max(used) if used else None


def _growth(analysis: Analysis) -> int | None:
    model = analysis.steps
    if model is None or len(model.steps) < 3:
        return None
    floors = [step.floor_allocated for step in model.steps[1:]]
    return max(floors) - floors[0]


def _side(analysis: Analysis, meta: dict | None) -> RunSide:
    model = analysis.steps
    return RunSide(outcome=analysis.outcome, cause=analysis.diagnosis.cause,
                   peak_allocated=analysis.timeline.peak_allocated, peak_reserved=analysis.timeline.peak_reserved,
                   peak_driver=_peak_driver(meta), steps=len(model.steps) if model else None,
                   completed=model.completed if model else None, growth=_growth(analysis))


@dataclass
class _Seen:
    """One side's figures for one line of the user's code: what it allocated and, as a storing line, kept."""
    path: str
    line: int | None
    label: str
    source: str | None
    live: int = 0
    growth: int = 0


def _file_name(path: str) -> str:
    return str(path).replace("\\", "/").rsplit("/", 1)[-1]


def _seen_lines(analysis: Analysis) -> dict[tuple, _Seen]:
    """(file name, text or number) -> the line's figures; a storing line that allocated nothing still
    names where the growth was kept (its bytes count once, not on top of its own allocations)."""
    seen: dict[tuple, _Seen] = {}

    def entry(path, line, label, source) -> _Seen:
        key = (_file_name(path), source) if source else (_file_name(path), line)
        return seen.setdefault(key, _Seen(path, line, label, source))

    for line in analysis.lines:
        if line.path is not None:
            found = entry(line.path, line.line, line.label, line.source)
            found.live += line.live_bytes
            found.growth += line.growth_bytes
    for storing in analysis.storing:
        found = entry(storing.path, storing.line, storing.label, storing.source)
        found.live, found.growth = max(found.live, storing.bytes), max(found.growth, storing.growth_bytes)
    return seen


def _edited_pairs(before: dict[tuple, _Seen], after: dict[tuple, _Seen]) -> dict[tuple, tuple]:
    """Lines whose text changed between the runs (the fix itself edits the line that kept the memory):
    an unmatched line of before is the unmatched line of after at the place its unchanged neighbours
    moved to — the shift of the nearest line matched by text in the same file (none: not moved)."""
    shifts: dict[str, list[tuple[int, int]]] = {}
    for key in before.keys() & after.keys():
        if before[key].line is not None and after[key].line is not None:
            shifts.setdefault(key[0], []).append((before[key].line, after[key].line - before[key].line))
    open_after = {(key[0], seen.line): key for key, seen in after.items() if key not in before and seen.line is not None}
    pairs = {}
    for key, seen in before.items():
        if key in after or seen.line is None:
            continue
        near = min(shifts.get(key[0], []), key=lambda pair: abs(pair[0] - seen.line), default=(seen.line, 0))
        moved = open_after.pop((key[0], seen.line + near[1]), None)
        if moved is not None:
            pairs[key] = moved
    return pairs


def _files_read(analysis: Analysis) -> set[str]:
    """The user files whose text this analysis could read here (a capture recorded elsewhere may read none)."""
    return {_file_name(line.path) for line in analysis.lines if line.path is not None and line.source}


def _line_deltas(before: Analysis, after: Analysis, notes: list[str] | None = None) -> list[Delta]:
    seen_before, seen_after = _seen_lines(before), _seen_lines(after)
    edited = _edited_pairs(seen_before, seen_after)
    deltas: list[Delta] = []
    for key, old in seen_before.items():
        new = seen_after.get(edited.get(key, key))
        now = new or old  # where the line is now, when it is still there
        deltas.append(Delta(now.label, old.live, new.live if new else 0, old.growth, new.growth if new else 0,
                            source=now.source, path=now.path, line=now.line,
                            edited_from=old.source if key in edited else None))
    matched = {edited.get(key, key) for key in seen_before}
    deltas += [Delta(new.label, 0, new.live, 0, new.growth, source=new.source, path=new.path, line=new.line)
               for key, new in seen_after.items() if key not in matched]
    # A line found on one side only, in a file the other side could not read, is not known to be absent
    # there (a storing line is found from the file's text): it is left out, never shown as 0 B.
    read_before, read_after = _files_read(before), _files_read(after)

    def unknown_on_one_side(d: Delta) -> bool:
        return ((d.before == 0 and d.growth_before == 0 and _file_name(d.path) not in read_before)
                or (d.after == 0 and d.growth_after == 0 and _file_name(d.path) not in read_after))

    unknown = [d for d in deltas if unknown_on_one_side(d)]
    if unknown and notes is not None:
        notes.append(f"Not compared: {', '.join(sorted({d.label for d in unknown}))}, found from a file's text on one "
                     "side only (the other capture's files could not be read here: pass --source-root).")
    deltas = [d for d in deltas if not unknown_on_one_side(d)]
    changed = [d for d in deltas if abs(d.change) >= MIN_DELTA or abs(d.growth_after - d.growth_before) >= MIN_DELTA]
    return sorted(changed, key=lambda d: (-abs(d.growth_after - d.growth_before), -abs(d.change)))


def _holder_deltas(before: Analysis, after: Analysis, notes: list[str] | None = None) -> list[Delta]:
    """Holders by name, when both captures hold a census: without one, who held what is unknown, not nothing."""
    missing = [side for side, analysis in (("before", before), ("after", after)) if analysis.census_moment is None]
    if missing:
        if notes is not None and (before.holders or after.holders):
            notes.append(f"Holders are not compared: the {' and the '.join(missing)} capture has no tensor census.")
        return []
    found: dict = {}
    for side, analysis in (("before", before), ("after", after)):
        for holder in analysis.holders:
            delta = found.setdefault(holder.root, Delta(holder.root, 0, 0))
            kept = holder.bytes + holder.graph_bytes
            if side == "before":
                delta.before, delta.growth_before = delta.before + kept, delta.growth_before + (holder.survivor_bytes or 0)
            else:
                delta.after, delta.growth_after = delta.after + kept, delta.growth_after + (holder.survivor_bytes or 0)
    changed = [d for d in found.values() if abs(d.change) >= MIN_DELTA]
    return sorted(changed, key=lambda d: -abs(d.change))


def _ending(side: RunSide) -> str:
    if side.outcome == "oom":
        return f"ran out of memory after {side.completed} step(s)" if side.completed is not None else "ran out of memory"
    return f"completes ({side.completed} step(s))" if side.completed is not None else "completes"


def _sentence(diff: CaptureDiff) -> str:
    before, after = diff.before, diff.after
    parts = []
    grown_before, grown_after = before.growth or 0, after.growth or 0
    changed = next((d for d in diff.lines if d.growth_before > d.growth_after), None)
    if grown_before - grown_after >= MIN_DELTA:
        where = f" (kept at {changed.label} before)" if changed is not None else ""
        parts.append(f"the change removed {fmt(grown_before - grown_after)} of growth across steps{where}")
    peak = before.peak_allocated - after.peak_allocated
    if abs(peak) >= MIN_DELTA:
        parts.append(f"the peak allocated went {'down' if peak > 0 else 'up'} by {fmt(abs(peak))} "
                     f"({fmt(before.peak_allocated)} → {fmt(after.peak_allocated)})")
    if before.outcome == "oom" and after.outcome != "oom":
        parts.append("the run now completes")
    elif before.outcome != "oom" and after.outcome == "oom":
        parts.append("the run now runs out of memory")
    elif before.outcome == after.outcome == "oom":
        further = (after.completed or 0) - (before.completed or 0)
        parts.append(f"it still runs out of memory ({'after ' + str(further) + ' more step(s)' if further > 0 else 'no further'})")
    if not parts:
        return "No difference worth a mention: the peaks, the outcome and the growth are the same within 1 MiB."
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + "."


def diff_analyses(before: Analysis, after: Analysis, before_meta: dict | None = None,
                  after_meta: dict | None = None) -> CaptureDiff:
    notes: list[str] = []
    diff = CaptureDiff(_side(before, before_meta), _side(after, after_meta), _line_deltas(before, after, notes),
                       _holder_deltas(before, after, notes), notes=notes)
    scripts = {_file_name((meta or {}).get("script") or "")
               for meta in (before_meta, after_meta)} - {""}
    if len(scripts) > 1:
        diff.notes.append(f"The two captures ran different scripts ({', '.join(sorted(scripts))}): the comparison "
                          "may not be of one change.")
    argv = [list((meta or {}).get("argv") or [])[1:] for meta in (before_meta, after_meta)]
    if argv[0] != argv[1]:
        diff.notes.append(f"The arguments differ: {' '.join(map(str, argv[0])) or '(none)'} → "
                          f"{' '.join(map(str, argv[1])) or '(none)'}.")
    diff.sentence = _sentence(diff)
    return diff


def diff_to_json(diff: CaptureDiff) -> dict:
    def side(run: RunSide) -> dict:
        return {"outcome": run.outcome, "cause": run.cause, "peak_allocated": run.peak_allocated,
                "peak_reserved": run.peak_reserved, "peak_driver": run.peak_driver, "steps": run.steps,
                "completed": run.completed, "growth": run.growth}

    def delta(item: Delta) -> dict:
        return {"label": item.label, "path": item.path, "line": item.line, "source": item.source,
                "before": item.before, "after": item.after, "change": item.change,
                "growth_before": item.growth_before, "growth_after": item.growth_after,
                "edited_from": item.edited_from}

    return {"format": "vramlens-diff", "version": 1, "before": side(diff.before), "after": side(diff.after),
            "sentence": diff.sentence, "lines": [delta(item) for item in diff.lines[:20]],
            "holders": [delta(item) for item in diff.holders[:20]], "notes": list(diff.notes)}


def diff_text(diff: CaptureDiff, before_name: str, after_name: str) -> str:
    def figure(value: int | None) -> str:
        return fmt(value) if value is not None else "unknown"

    def change(before: int | None, after: int | None) -> str:
        if before is None or after is None:
            return ""
        return f"{'+' if after >= before else '−'}{fmt(abs(after - before))}"

    out = [f"VRAM Lens — before {before_name}", f"            after  {after_name}", "", diff.sentence, ""]
    rows = [("outcome", _ending(diff.before), _ending(diff.after), ""),
            ("cause", diff.before.cause, diff.after.cause, ""),
            ("peak allocated", figure(diff.before.peak_allocated), figure(diff.after.peak_allocated),
             change(diff.before.peak_allocated, diff.after.peak_allocated)),
            ("peak reserved", figure(diff.before.peak_reserved), figure(diff.after.peak_reserved),
             change(diff.before.peak_reserved, diff.after.peak_reserved)),
            ("peak driver-visible", figure(diff.before.peak_driver), figure(diff.after.peak_driver),
             change(diff.before.peak_driver, diff.after.peak_driver)),
            ("growth across steps", figure(diff.before.growth), figure(diff.after.growth),
             change(diff.before.growth, diff.after.growth))]
    out.append(f"  {'':22} {'before':>30} {'after':>30} {'change':>12}")
    out += [f"  {label:22} {before:>30} {after:>30} {delta:>12}" for label, before, after, delta in rows]
    if diff.lines:
        out += ["", "Lines (live bytes at each run's moment; growth across steps)"]
        for item in diff.lines[:8]:
            grown = (f"; growth {fmt(item.growth_before)} → {fmt(item.growth_after)}"
                     if item.growth_before or item.growth_after else "")
            out.append(f"  {item.label}: {fmt(item.before)} → {fmt(item.after)} ({change(item.before, item.after)}){grown}")
            if item.edited_from:
                out.append(f"     was > {item.edited_from}")
            if item.source:
                out.append(f"     > {item.source}")
    if diff.holders:
        out += ["", "Holders"]
        out += [f"  {item.label}: {fmt(item.before)} → {fmt(item.after)} ({change(item.before, item.after)})"
                for item in diff.holders[:8]]
    out += [f"Note: {note}" for note in diff.notes]
    return "\n".join(out) + "\n"
