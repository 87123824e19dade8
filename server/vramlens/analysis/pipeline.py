"""Capture -> Analysis: the stages in order (load → replay → steps → accounting → attribution →
diagnosis → recommendations); each stage is a subpackage that only calls downward, and returns a
frozen result that later stages read and never change."""

from __future__ import annotations

import gc
from pathlib import Path

from vramlens.analysis import accounting, attribution, diagnosis, load, recommendations, replay, steps
from vramlens.analysis.load.ending import outcome_line
from vramlens.analysis.model import Analysis, OomEvent, Recommendation
from vramlens.capture import Capture, CaptureError, load_capture
from vramlens.units import format_bytes as fmt

ENVIRONMENT_KEYS = ("gpu_name", "device_index", "total_memory", "compute_capability", "driver", "torch", "cuda",
                    "cudnn", "allocator_backend", "allocator_settings", "alloc_env")


def analyze_path(path: str | Path, total_memory: int | None = None, source_root: str | None = None) -> Analysis:
    return analyze_capture(load_capture(path), total_memory=total_memory, source_root=source_root)


def analyze_capture(capture: Capture, total_memory: int | None = None, source_root: str | None = None,
                    history: bool = False) -> Analysis:
    """``history``: also each user line's live bytes over time, as the editor's timeline draws them
    (one more pass over the trace, which the command line does without).

    The whole analysis runs with the cyclic garbage collector paused: it makes no cycles, yet each
    collection would walk the snapshot's millions of objects again (measured: a step model of 90k
    iterations took 1.1 s with it, 0.08 s without)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _analyze(capture, total_memory, source_root, history)
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


def _analyze(capture: Capture, total_memory: int | None, source_root: str | None, history: bool) -> Analysis:
    loaded = load.read(capture, total_memory, source_root)
    replayed = replay.run(loaded)
    stepped = steps.model(loaded, replayed)
    accounted = accounting.account(loaded, replayed)
    attributed = attribution.attribute(loaded, replayed, stepped, history)
    diagnosed = diagnosis.diagnose(loaded, replayed, stepped, accounted, attributed)
    advice = recommendations.recommend(loaded, accounted, attributed, diagnosed)
    return _assemble(loaded, replayed, stepped, accounted, attributed, diagnosed, advice)


def _assemble(loaded: load.Loaded, replayed: replay.Replayed, stepped: steps.Steps, accounted: accounting.Accounted,
              attributed: attribution.Attributed, diagnosed: diagnosis.Diagnosed, advice: list[Recommendation]) -> Analysis:
    """The stages' results as one Analysis, built once."""
    meta, outcome, census, cause = loaded.meta, replayed.outcome, attributed.census, diagnosed.diagnosis.cause
    return Analysis(
        outcome=outcome, status=loaded.status, diagnosis=diagnosed.diagnosis, accounting=accounted.accounting,
        timeline=replayed.timeline, oom=_oom_event(replayed, accounted, attributed) if outcome == "oom" else None,
        lines=attributed.lines, recommendations=advice,
        environment=_environment(meta, loaded.settings, loaded.expandable_on, accounted.total, loaded.device),
        allocator_settings=loaded.settings, source_root=meta.get("source_root"), local_root=loaded.resolver.local_root,
        notes=[*loaded.notes, *replayed.notes, *accounted.notes, *attributed.notes],
        steps=stepped.model, mode=diagnosed.facts.mode,
        roles=census.roles if census else [], holders=census.holders if census else [], breakdown=attributed.breakdown,
        census_moment=census.moment if census else None, notebook=loaded.resolver.cells,
        outcome_text=(f"out of memory (request {fmt(replayed.request)})" if outcome == "oom"
                      else outcome_line(outcome, meta, loaded.status)),
        phase_marks=loaded.phase_marks, storing=attributed.storing,
        storing_note=attributed.storing_note if cause == "retained_references" else None, history=attributed.history,
    )


def _oom_event(replayed: replay.Replayed, accounted: accounting.Accounted, attributed: attribution.Attributed) -> OomEvent:
    return OomEvent(request=replayed.request, device_free=replayed.device_free,
                    device_limit=replayed.oom_facts.get("device_limit") or accounted.accounting.limit,
                    count=replayed.oom_count, index=replayed.replay.oom_index, site=attributed.site)


def _environment(meta: dict, settings: dict, expandable_on: bool, total: int | None, device: int) -> dict:
    environment = {key: (meta.get("environment") or {}).get(key) for key in ENVIRONMENT_KEYS}
    environment.update(allocator_settings=settings, expandable_segments=expandable_on, total_memory=total,
                       device_index=device)
    return environment


