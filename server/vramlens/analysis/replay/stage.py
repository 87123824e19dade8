"""The replay stage: the trace replayed once, set on the absolute state the snapshot implies, and
the moment the analysis is about (the OOM, the end of a trace that missed its OOM, or the peak of
a completed run) with the bytes allocated and reserved then."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from vramlens.analysis.load.ending import caught_ooms_note, only_library_probes
from vramlens.analysis.load.stage import Loaded
from vramlens.analysis.model import Timeline, TimelinePoint
from vramlens.analysis.replay.before_trace import add_blocks_from_before_trace
from vramlens.analysis.replay.trace import ReplayResult, replay


@dataclass(frozen=True)
class Replayed:
    """The replay stage's result: the replayed trace, its timeline and its outcome."""

    replay: ReplayResult  # with its OOMs forgotten when they were only a library's probes
    timeline: Timeline  # as the trace shows it, probes included
    start_allocated: int  # bytes live when the recorded history began
    outcome: str  # "oom" | "completed"
    moment: str  # "oom" | "end" | "peak"
    oom_facts: dict  # capture.json's "oom" (torch's own counters from the OOM observer), {} when none
    request: int | None  # the failing request
    device_free: int | None  # what the driver called free at the OOM
    oom_count: int
    allocated: int  # at the moment
    reserved: int
    time_us: int | None  # of the moment, when the trace holds it
    notes: tuple[str, ...]

    @property
    def live_at_moment(self) -> dict:
        """addr -> (size, line accumulator, trace index) of the blocks the trace holds live at the moment."""
        rep = self.replay
        return rep.live_at_oom if rep.live_at_oom is not None else rep.end_live


def run(loaded: Loaded) -> Replayed:
    meta, notes = loaded.meta, []
    rep = replay(loaded.trace, loaded.resolver)
    start_allocated = add_blocks_from_before_trace(rep, loaded.segments, loaded.resolver)
    final_reserved = sum(segment.get("total_size", 0) for segment in loaded.segments)
    start_reserved = final_reserved - rep.end_reserved
    if start_reserved < 0:
        notes.append("The trace freed more segments than the snapshot explains; reserved bytes before it are taken as 0.")
        start_reserved = 0
    timeline = _timeline(rep, start_allocated, start_reserved)

    oom_facts = meta.get("oom") or {}
    caught_note = caught_ooms_note(meta, max(rep.oom_count, oom_facts.get("count") or 0))
    if caught_note:
        notes.append(caught_note)
    if only_library_probes(meta):
        # The run did not run out: its OOMs were a library's probes, caught where no code of the user's saw them.
        rep, oom_facts = _without_ooms(rep), {}
    outcome = "oom" if rep.oom_index is not None or meta.get("status") == "oom" or oom_facts else "completed"
    moment = "oom" if rep.oom_index is not None else ("end" if outcome == "oom" else "peak")
    if moment == "end":
        notes.append("The run hit an OOM the trace does not hold; the numbers are from the end of the trace.")
    allocated, reserved, time_us = _state_at(moment, oom_facts, timeline, rep)
    return Replayed(
        replay=rep, timeline=timeline, start_allocated=start_allocated, outcome=outcome, moment=moment,
        oom_facts=oom_facts, request=oom_facts.get("requested") or rep.oom_request,
        device_free=oom_facts.get("device_free", rep.oom_device_free),
        oom_count=max(rep.oom_count, oom_facts.get("count") or 0),
        allocated=allocated, reserved=reserved, time_us=time_us, notes=tuple(notes),
    )


def _timeline(rep: ReplayResult, start_allocated: int, start_reserved: int) -> Timeline:
    points = [TimelinePoint(i, t, start_allocated + a, start_reserved + r) for i, t, a, r in rep.points]
    return Timeline(
        entries=rep.entries, points=points, start_allocated=start_allocated, start_reserved=start_reserved,
        end_allocated=start_allocated + rep.end_allocated, end_reserved=start_reserved + rep.end_reserved,
        peak_allocated=start_allocated + rep.peak_allocated, peak_reserved=start_reserved + rep.peak_reserved,
        peak_index=rep.peak_index, peak_time_us=rep.peak_time_us, oom_index=rep.oom_index, oom_time_us=rep.oom_time_us,
        allocated_at_oom=None if rep.allocated_at_oom is None else start_allocated + rep.allocated_at_oom,
        reserved_at_oom=None if rep.reserved_at_oom is None else start_reserved + rep.reserved_at_oom,
    )


def _without_ooms(rep: ReplayResult) -> ReplayResult:
    """The replay with its OOMs forgotten (they were caught inside libraries): the run is read as completed."""
    return dataclasses.replace(rep, oom_index=None, oom_time_us=None, oom_request=None, oom_stream=None,
                               oom_device_free=None, oom_count=0, allocated_at_oom=None, reserved_at_oom=None,
                               live_at_oom=None, oom_frames=None, segment_events_after_oom=[], pre_freed_after_oom=[],
                               oom_alloc_count=None)


def _state_at(moment: str, oom_facts: dict, timeline: Timeline, rep: ReplayResult) -> tuple[int, int, int | None]:
    """(allocated, reserved, time in µs) at the moment the analysis is about."""
    if moment == "oom":
        # torch's own counters from the OOM observer are exact; the replay is the fallback.
        allocated = oom_facts.get("allocated") or timeline.allocated_at_oom
        reserved = oom_facts.get("reserved") or timeline.reserved_at_oom
        return allocated, reserved, rep.oom_time_us
    if moment == "end":
        return timeline.end_allocated, timeline.end_reserved, None
    return timeline.peak_allocated, timeline.start_reserved + rep.reserved_at_peak, rep.peak_time_us
