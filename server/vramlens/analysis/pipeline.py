"""Capture -> Analysis: the stages in order (load → replay → steps → attribution → accounting →
diagnosis → recommendations); each stage is a subpackage that only calls downward."""

from __future__ import annotations

import os
from pathlib import Path

from vramlens.analysis.accounting.bytes import account, allocator_limit, device_total, nvml_sample
from vramlens.analysis.attribution.lines import add_blocks_from_before_trace, backward_seen, line_stats
from vramlens.analysis.diagnosis.classify import RunFacts, diagnose
from vramlens.analysis.load.ending import no_oom_sentence, nothing_recorded, outcome_line, run_status
from vramlens.analysis.load.interventions import read_interventions
from vramlens.analysis.accounting.free_blocks import free_blocks_at_end, free_blocks_at_oom, largest_free
from vramlens.analysis.model import Analysis, OomEvent, PhaseMark, Timeline, TimelinePoint
from vramlens.analysis.load.snapshot import (
    allocator_settings, block_frames, device_segments, device_trace, expandable_segments_on, pick_device, pool_for_request,
    settle_skipped_actions,
)
from vramlens.analysis.recommendations.advice import recommend
from vramlens.analysis.attribution.request_site import request_site, site_sentence
from vramlens.analysis.replay.trace import KEY, replay
from vramlens.analysis.load.sources import SourceResolver
from vramlens.capture import Capture, CaptureError, load_capture
from vramlens.units import format_bytes as fmt

ENVIRONMENT_KEYS = ("gpu_name", "device_index", "total_memory", "compute_capability", "driver", "torch", "cuda",
                    "cudnn", "allocator_backend", "allocator_settings", "alloc_env")


def analyze_path(path: str | Path, total_memory: int | None = None, source_root: str | None = None) -> Analysis:
    return analyze_capture(load_capture(path), total_memory=total_memory, source_root=source_root)


def _check_usable(capture: Capture, trace: list) -> None:
    meta = capture.meta
    if meta.get("status") == "no_cuda":
        raise CaptureError("This capture has no CUDA allocator history: the script never used CUDA in that interpreter.")
    if not trace:
        raise nothing_recorded(meta)


def _sample_filenames(trace: list, segments: list[dict], entries: int = 2000) -> set[str]:
    """File names from the first allocations and the final blocks: enough to tell whether the
    local source root holds this program's files."""
    names = set()
    for entry in trace[:entries]:
        names.update(frame.get("filename", "??") for frame in entry.get("frames") or ())
    for segment in segments:
        for block in (segment.get("blocks") or ())[:entries]:
            names.update(frame.get("filename", "??") for frame in block_frames(block))
    return names


def _timeline(rep, start_allocated: int, start_reserved: int) -> Timeline:
    points = [TimelinePoint(i, t, start_allocated + a, start_reserved + r) for i, t, a, r in rep.points]
    return Timeline(
        entries=rep.entries, points=points, start_allocated=start_allocated, start_reserved=start_reserved,
        end_allocated=start_allocated + rep.end_allocated, end_reserved=start_reserved + rep.end_reserved,
        peak_allocated=start_allocated + rep.peak_allocated, peak_reserved=start_reserved + rep.peak_reserved,
        peak_index=rep.peak_index, peak_time_us=rep.peak_time_us, oom_index=rep.oom_index, oom_time_us=rep.oom_time_us,
        allocated_at_oom=None if rep.allocated_at_oom is None else start_allocated + rep.allocated_at_oom,
        reserved_at_oom=None if rep.reserved_at_oom is None else start_reserved + rep.reserved_at_oom,
    )


def _oldest_live_fractions(rep, keys: list) -> dict:
    """For the given lines: how far into the history their oldest block still live (at the OOM or end) was made."""
    wanted = set(keys)
    oldest: dict = {}
    for _size, acc, index in (rep.live_at_oom if rep.live_at_oom is not None else rep.end_live).values():
        key = acc[KEY]
        if key in wanted and (key not in oldest or index < oldest[key]):
            oldest[key] = index
    return {key: index / max(rep.entries - 1, 1) for key, index in oldest.items()}


def analyze_capture(capture: Capture, total_memory: int | None = None, source_root: str | None = None) -> Analysis:
    try:
        return _analyze(capture, total_memory, source_root)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError, OverflowError, RecursionError) as error:
        # The loader checked the shape (capture/snapshot_shape.py), so this is the last net for a Capture
        # built by hand: a pickle of builtins shaped unlike any torch snapshot is said so, never a traceback.
        raise CaptureError(
            f"The snapshot's layout is not one this version understands ({type(error).__name__}: {error}); "
            "it may be damaged or come from an unsupported torch release."
        ) from None


def _state_at(moment: str, meta_oom: dict, timeline: Timeline, rep, segments: list[dict]) -> tuple:
    """(allocated, reserved, free blocks, time in µs) at the moment the analysis is about."""
    if moment == "oom":
        # torch's own counters from the OOM observer are exact; the replay is the fallback.
        allocated = meta_oom.get("allocated") or timeline.allocated_at_oom
        reserved = meta_oom.get("reserved") or timeline.reserved_at_oom
        return allocated, reserved, free_blocks_at_oom(segments, rep), rep.oom_time_us
    if moment == "end":
        return timeline.end_allocated, timeline.end_reserved, free_blocks_at_end(segments), None
    reserved = timeline.start_reserved + rep.reserved_at_peak
    return timeline.peak_allocated, reserved, free_blocks_at_end(segments), rep.peak_time_us


def _environment(meta: dict, settings: dict, expandable_on: bool, total: int | None, device: int) -> dict:
    environment = {key: (meta.get("environment") or {}).get(key) for key in ENVIRONMENT_KEYS}
    environment.update(allocator_settings=settings, expandable_segments=expandable_on, total_memory=total,
                       device_index=device)
    return environment


def _analyze(capture: Capture, total_memory: int | None, source_root: str | None) -> Analysis:
    meta, snapshot = capture.meta, capture.snapshot
    device = pick_device(snapshot, meta)
    trace = device_trace(snapshot, device)
    _check_usable(capture, trace)
    segments = device_segments(snapshot, device)
    settings = allocator_settings(snapshot, meta)
    notes: list[str] = list(capture.notes)
    trace_facts = capture.traces.get(device)
    if trace_facts is not None:
        notes += settle_skipped_actions(trace, trace_facts.actions, trace_facts.reused_addresses)

    recorded_root = meta.get("source_root")
    local_root = source_root or (recorded_root if recorded_root and os.path.isdir(recorded_root) else None)
    resolver = SourceResolver(recorded_root, local_root)
    resolver.use_mapping_if_it_matches(_sample_filenames(trace, segments))
    rep = replay(trace, resolver)

    start_allocated = add_blocks_from_before_trace(rep, segments, resolver)
    final_reserved = sum(segment.get("total_size", 0) for segment in segments)
    start_reserved = final_reserved - rep.end_reserved
    if start_reserved < 0:
        notes.append("The trace freed more segments than the snapshot explains; reserved bytes before it are taken as 0.")
        start_reserved = 0
    timeline = _timeline(rep, start_allocated, start_reserved)

    meta_oom = meta.get("oom") or {}
    status = run_status(meta)
    outcome = "oom" if rep.oom_index is not None or meta.get("status") == "oom" or meta_oom else "completed"
    moment = "oom" if rep.oom_index is not None else ("end" if outcome == "oom" else "peak")
    if outcome == "oom" and meta.get("status") not in (None, "oom"):
        notes.append(f"The run hit an OOM but ended with status {meta.get('status')!r}: it caught the error and went on.")
    request = meta_oom.get("requested") or rep.oom_request
    device_free = meta_oom.get("device_free", rep.oom_device_free)

    lines = line_stats(rep, moment, resolver)
    allocated, reserved, free, when_us = _state_at(moment, meta_oom, timeline, rep, segments)
    if moment == "end":
        notes.append("The run hit an OOM the trace does not hold; the numbers are from the end of the trace.")
    pool = pool_for_request(request) if request else "large"
    stream = rep.oom_stream if moment == "oom" else None
    largest = min(largest_free(free, pool, stream), max(reserved - allocated, 0)) if free or segments else None

    total = device_total(meta, total_memory)
    if total is None:
        notes.append("The device's total memory is unknown (a raw snapshot): pass --total-memory, e.g. 24GiB.")
    limit, limit_is_cap = allocator_limit(meta, total)
    accounting = account(
        moment=moment, allocated=allocated, reserved=reserved, largest_free_block=largest, pool=pool,
        request=request if outcome == "oom" else None, device_free=device_free if outcome == "oom" else None,
        sample=nvml_sample(meta, moment, when_us, reserved), total=total, limit=limit, limit_is_cap=limit_is_cap,
        own_pid=(meta.get("nvml") or {}).get("pid"),
    )
    growing_keys = [(line.path, line.line) for line in lines if line.growing]
    facts = RunFacts(
        outcome=outcome, peak_allocated=timeline.peak_allocated, peak_reserved=timeline.peak_reserved,
        end_allocated=timeline.end_allocated, end_reserved=timeline.end_reserved,
        oom_count=max(rep.oom_count, meta_oom.get("count") or 0),
        oldest_live_fraction=_oldest_live_fractions(rep, growing_keys),
        status=status, no_oom_sentence=no_oom_sentence(meta, status), backward_seen=backward_seen(rep),
    )
    diagnosis = diagnose(accounting, lines, facts)
    tried = read_interventions(meta)
    diagnosis.evidence += [f"Tried on this script: {item.summary()}." for item in tried]
    expandable_on = expandable_segments_on(settings, segments)
    recommendations = recommend(diagnosis, accounting, lines, settings, expandable_on, tried,
                                meta=meta, backward_ran=facts.backward_seen)

    environment = _environment(meta, settings, expandable_on, total, device)
    oom = None
    if outcome == "oom":
        site = request_site(rep.oom_frames, meta, resolver) if moment == "oom" else None
        oom = OomEvent(request=request, device_free=device_free, device_limit=meta_oom.get("device_limit") or limit,
                       count=facts.oom_count, index=rep.oom_index, site=site)
        if site is not None:
            diagnosis.evidence.append(site_sentence(site, request, resolver))
    return Analysis(
        outcome=outcome, status=status, diagnosis=diagnosis, accounting=accounting, timeline=timeline,
        oom=oom, lines=lines, recommendations=recommendations, environment=environment,
        allocator_settings=settings, source_root=recorded_root, local_root=resolver.local_root, notes=notes,
        outcome_text=f"out of memory (request {fmt(request)})" if outcome == "oom" else outcome_line(outcome, meta, status),
        phase_marks=[PhaseMark(mark.index, mark.time_us, mark.text) for mark in (trace_facts.annotations if trace_facts else [])],
    )
