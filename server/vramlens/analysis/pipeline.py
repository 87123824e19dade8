"""Capture -> Analysis: the stages in order (load → replay → steps → attribution → accounting →
diagnosis → recommendations); each stage is a subpackage that only calls downward."""

from __future__ import annotations

import dataclasses
import gc
import os
from pathlib import Path

from vramlens.analysis.accounting.bytes import account, allocator_limit, device_total, nvml_sample
from vramlens.analysis.attribution.lines import (
    add_live_detail, backward_seen, line_stats, mark_growing,
)
from vramlens.analysis.diagnosis.classify import RunFacts, diagnose, effective_limit
from vramlens.analysis.attribution.growth import carriers_at_peak, growth_of
from vramlens.analysis.diagnosis.kernel_held import kernel_held_findings
from vramlens.analysis.diagnosis.mode import main_thread_in_backward, run_mode
from vramlens.analysis.load.ending import (
    caught_ooms_note, no_oom_sentence, nothing_recorded, only_library_probes, outcome_line, rejection_note, run_status,
)
from vramlens.analysis.load.interventions import read_interventions
from vramlens.analysis.load.notebook import read_notebook_facts
from vramlens.analysis.accounting.free_blocks import free_blocks_at_end, free_blocks_at_oom, largest_free, split_segments
from vramlens.analysis.model import Analysis, OomEvent, PhaseMark, Timeline, TimelinePoint
from vramlens.analysis.load.snapshot import (
    allocator_settings, block_frames, device_segments, device_trace, expandable_segments_on, pick_device, pool_for_request,
    settle_skipped_actions,
)
from vramlens.analysis.recommendations.advice import recommend
from vramlens.analysis.diagnosis.confirm import plan_for
from vramlens.analysis.diagnosis.measured import apply_confirmation
from vramlens.analysis.attribution.library_tree import library_trees
from vramlens.analysis.attribution.roles import join_census, live_blocks
from vramlens.analysis.attribution.request_site import request_site, site_sentence
from vramlens.analysis.attribution.growth_holders import rank_by_growth
from vramlens.analysis.attribution.storing import SourceFacts, storing_lines
from vramlens.analysis.replay.before_trace import add_blocks_from_before_trace
from vramlens.analysis.replay.trace import replay
from vramlens.analysis.steps import build_step_model
from vramlens.analysis.load.sources import SourceResolver, usable_recorded_root
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


def analyze_capture(capture: Capture, total_memory: int | None = None, source_root: str | None = None) -> Analysis:
    """The whole analysis runs with the cyclic garbage collector paused: it makes no cycles, yet each
    collection would walk the snapshot's millions of objects again (measured: a step model of 90k
    iterations took 1.1 s with it, 0.08 s without)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _analyze(capture, total_memory, source_root)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError, OverflowError, RecursionError) as error:
        # The loader checked the shape (capture/snapshot_shape.py), so this is the last net for a Capture
        # built by hand: a pickle of builtins shaped unlike any torch snapshot is said so, never a traceback.
        raise CaptureError(
            f"The snapshot's layout is not one this version understands ({type(error).__name__}: {error}); "
            "it may be damaged or come from an unsupported torch release."
        ) from None
    finally:
        if was_enabled:
            gc.enable()


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


def _census_view(capture: Capture, meta: dict, outcome: str, segments: list[dict], allocated_at_oom: int,
                 end_allocated: int, resolver: SourceResolver, device: int, rep, trace: list, peak_allocated: int,
                 notes: list[str]):
    """The census of the moment the analysis is about, joined to the snapshot's blocks when both were
    taken at the same moment (the OOM, the end, on demand). A completed run prefers the census taken
    near its peak; that one is read on its own, as the snapshot is of the end. A census that counts
    more than was ever allocated at once is not of this run: it is left out, and said so."""
    census = capture.census if outcome == "oom" else (capture.peak_census or capture.census)
    if census is None and outcome == "oom" and capture.peak_census is not None:
        census = capture.peak_census  # said in the notes: see _missing_oom_census_note
    if census is None:
        return None
    counted = sum(storage["bytes"] for storage in census["storages"] if storage["device"] in (device, -1))
    if peak_allocated and counted > peak_allocated + max(peak_allocated // 100, 1 << 20):
        notes.append(f"The census counts {fmt(counted)} of tensors, more than the {fmt(peak_allocated)} the snapshot "
                     "ever had allocated at once: it is not of this run, so who holds the memory is not said.")
        return None
    same_moment = census["moment"] == meta.get("snapshot_moment")
    allocated = allocated_at_oom if census["moment"] == "oom" else end_allocated
    live = rep.live_at_oom if census["moment"] == "oom" and rep.live_at_oom is not None else rep.end_live
    names = meta.get("frame_names") if isinstance(meta.get("frame_names"), dict) else None
    return join_census(census, segments if same_moment else None, allocated if same_moment else None, resolver, device,
                       live, trace, frame_names=names)


def _without_ooms(rep):
    """The replay with its OOMs forgotten (they were caught inside libraries): the run is read as completed."""
    return dataclasses.replace(rep, oom_index=None, oom_time_us=None, oom_request=None, oom_stream=None,
                               oom_device_free=None, oom_count=0, allocated_at_oom=None, reserved_at_oom=None,
                               live_at_oom=None, oom_frames=None, segment_events_after_oom=[], pre_freed_after_oom=[],
                               oom_alloc_count=None)


def _missing_oom_census_note(capture: Capture, outcome: str) -> str | None:
    if outcome != "oom" or capture.census is not None or capture.peak_census is None:
        return None
    return ("No census was taken at the OOM: the roles and holders shown are from the latest earlier census, taken "
            "at the allocated peak before it, and may miss what was allocated after that.")


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
    checked_trace = capture.traces.get(device)  # what the loader saw in this device's trace
    if checked_trace is not None:
        notes += settle_skipped_actions(trace, checked_trace.actions, checked_trace.reused_addresses)
    rejected = rejection_note(meta)
    if rejected:
        notes.append(rejected)

    recorded_root = meta.get("source_root")
    local_root = source_root or (recorded_root if usable_recorded_root(recorded_root) else None)
    resolver = SourceResolver(recorded_root, local_root)
    resolver.cells = read_notebook_facts(meta, resolver.local_path)
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
    caught_note = caught_ooms_note(meta, max(rep.oom_count, meta_oom.get("count") or 0))
    if caught_note:
        notes.append(caught_note)
    if only_library_probes(meta):
        # The run did not run out: its OOMs were a library's probes, caught where no code of the user's saw them.
        rep, meta_oom = _without_ooms(rep), {}
    outcome = "oom" if rep.oom_index is not None or meta.get("status") == "oom" or meta_oom else "completed"
    moment = "oom" if rep.oom_index is not None else ("end" if outcome == "oom" else "peak")
    request = meta_oom.get("requested") or rep.oom_request
    device_free = meta_oom.get("device_free", rep.oom_device_free)

    live_at_moment = rep.live_at_oom if rep.live_at_oom is not None else rep.end_live
    steps, trace_facts = build_step_model(rep, trace, start_allocated, moment, outcome, live_at_moment)
    lines = line_stats(rep, moment, resolver)
    add_live_detail(lines, rep, live_at_moment if moment != "peak" else None, trace, resolver)
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
    census = _census_view(capture, meta, outcome, segments, allocated, timeline.end_allocated, resolver, device, rep, trace,
                          timeline.peak_allocated, notes)
    if census is not None:
        notes += census.notes
    missing = _missing_oom_census_note(capture, outcome)
    if missing:
        notes.append(missing)
    roles_of = {block[0]: role for role, blocks in (census.blocks_by_role if census else {}).items() for block in blocks}
    breakdown = library_trees(live_blocks(segments, live_at_moment, trace), resolver, roles_of,
                              [(line.path, line.line) for line in lines if line.path is not None][:3],
                              meta.get("frame_names") if isinstance(meta.get("frame_names"), dict) else None)
    split = split_segments(free, pool)
    accounting.split_segments, accounting.split_free = split.count, split.free
    backward = (backward_seen(rep) or bool(trace_facts and trace_facts.backward_on_python_thread)
                or main_thread_in_backward(census))
    mode = run_mode(backward, bool(trace_facts and trace_facts.optimizer), steps,
                    census.grad_enabled if census else None, census.inference_mode if census else None)
    facts = RunFacts(
        outcome=outcome, peak_allocated=timeline.peak_allocated, peak_reserved=timeline.peak_reserved,
        end_allocated=timeline.end_allocated, end_reserved=timeline.end_reserved,
        oom_count=max(rep.oom_count, meta_oom.get("count") or 0),
        status=status, no_oom_sentence=no_oom_sentence(meta, status),
        steps=steps, growth=growth_of(steps, allocated, roles_of if moment != "peak" else None), mode=mode,
        grad_enabled=census.grad_enabled if census else None, census=census,
        cell_place=resolver.cells.place if resolver.cells is not None else None,
    )
    carriers_at_peak(facts.growth, lines, moment)
    if census is not None and census.moment == meta.get("snapshot_moment") and moment != "peak":
        rank_by_growth(census.holders, steps)  # survivors are of the snapshot's moment: the census' own
    facts.sources = SourceFacts(resolver)
    facts.storing, storing_note = storing_lines(census.holders if census else [], lines,
                                                facts.growth.carriers if facts.growth else [], facts.sources)
    mark_growing(lines, facts.growth)
    diagnosis = diagnose(accounting, lines, facts)
    apply_confirmation(diagnosis, meta.get("confirmation"))
    diagnosis.confirm = None if diagnosis.measured or outcome != "oom" else plan_for(
        diagnosis, meta, effective_limit(accounting), bool(facts.growth and facts.growth.intended_cache))
    tried = read_interventions(meta)
    diagnosis.evidence += [f"Tried on this script: {item.summary()}." for item in tried]
    expandable_on = expandable_segments_on(settings, segments)
    recommendations = recommend(diagnosis, accounting, lines, settings, expandable_on, tried, meta=meta, facts=facts)
    kernel_evidence, kernel_advice = kernel_held_findings(resolver.cells, allocated if outcome == "oom" else None)
    diagnosis.evidence += kernel_evidence
    recommendations = kernel_advice + recommendations

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
        steps=steps, mode=mode,
        roles=census.roles if census else [], holders=census.holders if census else [], breakdown=breakdown,
        census_moment=census.moment if census else None,
        notebook=resolver.cells,
        outcome_text=f"out of memory (request {fmt(request)})" if outcome == "oom" else outcome_line(outcome, meta, status),
        phase_marks=[PhaseMark(mark.index, mark.time_us, mark.text) for mark in (checked_trace.annotations if checked_trace else [])],
        storing=facts.storing, storing_note=storing_note if diagnosis.cause == "retained_references" else None,
    )
