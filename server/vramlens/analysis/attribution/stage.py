"""The attribution stage: who holds the bytes at the moment — the user lines that allocated them,
the census' roles and holders (ranked by what grew), the lines that store into those holders,
the library frames under the top lines, and where the failing request was made."""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.analysis.attribution.growth import Growth, carriers_at_peak, frameless_at_peak, growth_of
from vramlens.analysis.attribution.growth_holders import rank_by_growth
from vramlens.analysis.attribution.library_tree import library_trees
from vramlens.analysis.attribution.lines import add_live_detail, line_stats, mark_growing
from vramlens.analysis.model import LineHistory
from vramlens.analysis.attribution.request_site import request_site
from vramlens.analysis.attribution.roles import Census, join_census, live_blocks
from vramlens.analysis.attribution.storing import SourceFacts, storing_lines
from vramlens.analysis.load.stage import Loaded
from vramlens.analysis.model import FrameNode, LineStat, RequestSite, StoringLine
from vramlens.analysis.replay.stage import Replayed
from vramlens.analysis.steps.stage import Steps
from vramlens.units import format_bytes as fmt

@dataclass(frozen=True)
class Attributed:
    """The attribution stage's result: the lines, the census joined to the blocks, growth and storing lines."""

    lines: list[LineStat]  # every line that allocated, largest live first; the growing ones marked
    census: Census | None  # the census of the moment joined to the blocks; its holders ranked by growth
    roles_of: dict  # block address -> the census' role
    growth: Growth | None  # growth across steps and the lines that carry it
    storing: list[StoringLine]
    storing_note: str | None  # why no storing line is named, when memory is kept and none was found
    sources: SourceFacts  # the user's files, parsed once
    breakdown: list[FrameNode]  # per top user line: its library frames
    site: RequestSite | None  # where the failing request was made, when the trace holds it
    history: LineHistory | None  # per timeline point, the top user line; per step, each line's live bytes
    notes: tuple[str, ...]


def attribute(loaded: Loaded, replayed: Replayed, steps: Steps, history: bool = False) -> Attributed:
    """``history``: also replay the trace per user line for the editor's timeline (one more pass)."""
    rep, moment, resolver, trace = replayed.replay, replayed.moment, loaded.resolver, loaded.trace
    lines = line_stats(rep, moment, resolver)
    add_live_detail(lines, rep, replayed.live_at_moment if moment != "peak" else None, trace, resolver)
    census, notes = _census_view(loaded, replayed)
    if census is not None:
        notes += census.notes
    missing = _missing_oom_census_note(loaded, replayed.outcome)
    if missing:
        notes.append(missing)
    roles_of = {block[0]: role for role, blocks in (census.blocks_by_role if census else {}).items() for block in blocks}
    breakdown = library_trees(live_blocks(loaded.segments, replayed.live_at_moment, trace), resolver, roles_of,
                              [(line.path, line.line) for line in lines if line.path is not None][:3], loaded.frame_names)
    growth = carriers_at_peak(growth_of(steps.model, replayed.allocated, roles_of if moment != "peak" else None),
                              lines, moment)
    if census is not None and census.moment == loaded.meta.get("snapshot_moment") and moment != "peak":
        rank_by_growth(census.holders, steps.model)  # survivors are of the snapshot's moment: the census' own
    sources = SourceFacts(resolver)
    storing, storing_note = storing_lines(census.holders if census else [], lines, growth.carriers if growth else [],
                                          sources, backward_growth=frameless_at_peak(growth, lines, moment))
    mark_growing(lines, growth)
    return Attributed(
        lines=lines, census=census, roles_of=roles_of, growth=growth, storing=storing, storing_note=storing_note,
        sources=sources, breakdown=breakdown,
        site=request_site(rep.oom_frames, loaded.meta, resolver) if replayed.outcome == "oom" and moment == "oom" else None,
        history=_history(trace, lines, replayed, steps) if history else None, notes=tuple(notes),
    )


def _census_view(loaded: Loaded, replayed: Replayed) -> tuple[Census | None, list[str]]:
    """The census of the moment the analysis is about, joined to the snapshot's blocks when both were
    taken at the same moment (the OOM, the end, on demand). A completed run prefers the census taken
    near its peak; that one is read on its own, as the snapshot is of the end. A census that counts
    more than was ever allocated at once is not of this run: it is left out, and said so."""
    capture, outcome, timeline = loaded.capture, replayed.outcome, replayed.timeline
    census = capture.census if outcome == "oom" else (capture.peak_census or capture.census)
    if census is None and outcome == "oom" and capture.peak_census is not None:
        census = capture.peak_census  # said in the notes: see _missing_oom_census_note
    if census is None:
        return None, []
    peak_allocated = timeline.peak_allocated
    counted = sum(storage["bytes"] for storage in census["storages"] if storage["device"] in (loaded.device, -1))
    if peak_allocated and counted > peak_allocated + max(peak_allocated // 100, 1 << 20):
        return None, [f"The census counts {fmt(counted)} of tensors, more than the {fmt(peak_allocated)} the snapshot "
                      "ever had allocated at once: it is not of this run, so who holds the memory is not said."]
    rep = replayed.replay
    same_moment = census["moment"] == loaded.meta.get("snapshot_moment")
    allocated = replayed.allocated if census["moment"] == "oom" else timeline.end_allocated
    live = rep.live_at_oom if census["moment"] == "oom" and rep.live_at_oom is not None else rep.end_live
    joined = join_census(census, loaded.segments if same_moment else None, allocated if same_moment else None,
                         loaded.resolver, loaded.device, live, loaded.trace, frame_names=loaded.frame_names)
    return joined, []


def _missing_oom_census_note(loaded: Loaded, outcome: str) -> str | None:
    capture = loaded.capture
    if outcome != "oom" or capture.census is not None or capture.peak_census is None:
        return None
    return ("No census was taken at the OOM: the roles and holders shown are from the latest earlier census, taken "
            "at the allocated peak before it, and may miss what was allocated after that.")


def _history(trace: list, lines: list[LineStat], replayed: Replayed, steps: Steps) -> LineHistory:
    """The top user line at every timeline point, and each line's live bytes at the end of every step."""
    from vramlens.analysis.attribution.over_time import line_history  # the editor's alone: not at start-up

    step_ends = [max(step.end_index - 1, 0) for step in steps.model.steps] if steps.model else []
    return line_history(trace, lines, [point.index for point in replayed.timeline.points], step_ends)
