"""The --json schema (docs/analysis-json.md). Bytes stay integers; unknown values are null."""

from __future__ import annotations

from vramlens.analysis.model import Analysis, LineStat

SCHEMA_VERSION = 3  # 3: storing, storing_note, holders' survivor_bytes/working_set/stored_at/graph_bytes
# 2: steps, mode, alternative, confirm, measured, actions; growing means growth across steps
TIMELINE_POINTS = 200


def _line(line: LineStat) -> dict:
    return {
        "path": line.path, "local_path": line.local_path, "line": line.line, "function": line.function,
        "live_bytes": line.live_bytes, "share": round(line.share, 4), "allocated_bytes": line.allocated_bytes,
        "count": line.count, "growing": line.growing, "growth_bytes": line.growth_bytes, "live_blocks": line.live_blocks,
        "size_histogram": [{"size": size, "count": count} for size, count in line.size_histogram],
        "call_path": line.call_path, "source": line.source,
        "live_sizes": [{"size": size, "count": count} for size, count in line.live_sizes],
        "live_call_path": line.live_call_path,
        "cell": None if line.cell is None else {"label": line.cell.label, "index": line.cell.index,
                                                  "execution_count": line.cell.execution_count},
    }


def _notebook(analysis: Analysis) -> dict | None:
    facts = analysis.notebook
    if facts is None:
        return None
    return {
        "path": facts.path, "local_path": facts.local_path, "kernel": facts.kernel,
        "cells": [{"execution_count": run.execution_count, "index": run.index, "code_name": run.code_name,
                   "outcome": run.outcome, "allocated_before": run.allocated_before, "allocated_after": run.allocated_after}
                  for run in facts.runs],
        "kernel_holders": [{"root": h.root, "kind": h.kind, "free": h.free, "what": h.what, "bytes": h.bytes,
                            "exclusive_bytes": h.exclusive_bytes, "graph_bytes": h.graph_bytes, "tensors": h.tensors,
                            "shared_with": h.shared_with} for h in facts.holders],
    }


def _place(place) -> dict | None:
    return None if place is None else {"path": place[0], "line": place[1]}


def _storing(storing) -> dict:
    return {"holder": storing.holder, "target": storing.target, "kind": storing.kind, "path": storing.path,
            "line": storing.line, "local_path": storing.local_path, "source": storing.source, "bytes": storing.bytes,
            "growth_bytes": storing.growth_bytes, "allocated_at": _place(storing.allocated_at),
            "found_by": storing.found_by, "other_lines": list(storing.others),
            "kept_from": [{"path": path, "line": line, "bytes": size} for (path, line), size in storing.kept_from.items()],
            "cell": None if storing.cell is None else {"label": storing.cell.label, "index": storing.cell.index}}


def _node(node) -> dict:
    return {"label": node.label, "path": node.path, "line": node.line, "local_path": node.local_path,
            "bytes": node.bytes, "children": [_node(child) for child in node.children]}


def _confirm(plan) -> dict | None:
    if plan is None:
        return None
    return {"question": plan.question, "variants": plan.variants, "command": plan.command, "expectation": plan.expectation}


def _key(key) -> dict:
    path, line = key
    return {"path": path, "line": line} if path is not None else {"path": None, "line": None, "group": line}


def _steps(model) -> dict | None:
    if model is None:
        return None
    return {
        "count": len(model.steps), "completed": model.completed, "driver": model.driver, "boundary": model.boundary,
        "growth_per_step": model.growth_per_step, "survivors": model.survivors, "survivor_steps": model.survivor_steps,
        "old_survivors": model.old_survivors, "cache_survivors": model.cache_survivors,
        "carriers": [dict(_key(key), bytes=size) for key, size in sorted(model.survivors_by_line.items(), key=lambda kv: -kv[1])[:10]],
        "boundaries": [{"step": step.number, "start_index": step.start_index, "end_index": step.end_index,
                        "floor_allocated": step.floor_allocated, "peak_allocated": step.peak_allocated,
                        "complete": step.complete, "kind": step.kind} for step in _thin(model.steps)],
        "notes": list(model.notes),
    }


def _thin(steps: list, limit: int = 400) -> list:
    """At most ``limit`` steps: the first ones, the last ones, and evenly between (a long run has thousands)."""
    if len(steps) <= limit:
        return steps
    stride = -(-len(steps) // limit)
    kept = steps[:10] + steps[10:-10:stride] + steps[-10:]
    return kept


def downsample(points: list, limit: int = TIMELINE_POINTS) -> list:
    """Keep at most ``limit`` points, each the highest of the ones it stands for."""
    if len(points) <= limit:
        return list(points)
    step = -(-len(points) // limit)
    merged = []
    for start in range(0, len(points), step):
        group = points[start:start + step]
        last = group[-1]
        merged.append(type(last)(last.index, last.time_us, max(p.allocated for p in group), max(p.reserved for p in group)))
    return merged


def to_json(analysis: Analysis) -> dict:
    acc, timeline = analysis.accounting, analysis.timeline
    return {
        "schema_version": SCHEMA_VERSION,
        "outcome": analysis.outcome,
        "status": analysis.status,
        "cause": analysis.diagnosis.cause,
        "confidence": round(analysis.diagnosis.confidence, 2),
        "confidence_label": analysis.diagnosis.confidence_label,
        "evidence": list(analysis.diagnosis.evidence),
        "moment": acc.moment,
        "memory": {
            "allocated": acc.allocated, "reserved": acc.reserved, "cached": acc.cached,
            "largest_free_block": acc.largest_free_block, "largest_free_pool": acc.largest_free_pool,
            "free_block_fits_request": acc.free_block_fits_request,
            "peak_allocated": timeline.peak_allocated, "peak_reserved": timeline.peak_reserved,
            "end_allocated": timeline.end_allocated, "end_reserved": timeline.end_reserved,
            "driver_used": acc.driver_used, "process_used": acc.process_used, "non_pytorch": acc.non_pytorch,
            "context_and_libraries": acc.context_and_libraries, "other_processes": acc.other_processes,
            "unattributed": acc.unattributed,
            "other_process_usage": [{"pid": pid, "used": used} for pid, used in acc.other_process_usage],
            "device_total": acc.device_total, "driver_total": acc.driver_total, "limit": acc.limit, "limit_is_cap": acc.limit_is_cap,
            "request": acc.request, "device_free": acc.device_free, "nvml_phase": acc.nvml_phase,
        },
        "oom": None if analysis.oom is None else {
            "request": analysis.oom.request, "device_free": analysis.oom.device_free,
            "device_limit": analysis.oom.device_limit, "count": analysis.oom.count, "trace_index": analysis.oom.index,
            "site": None if analysis.oom.site is None else {
                "path": analysis.oom.site.path, "line": analysis.oom.site.line,
                "source": analysis.oom.site.source, "autograd": analysis.oom.site.autograd,
            },
        },
        "lines": [_line(line) for line in analysis.lines],
        "recommendations": [
            {"action": r.action, "reason": r.reason, "experiment": r.experiment, "command": r.command,
             "actions": [{"kind": a.kind, "title": a.title, "arguments": a.arguments} for a in r.actions]}
            for r in analysis.recommendations
        ],
        "alternative": analysis.diagnosis.alternative,
        "confirm": _confirm(analysis.diagnosis.confirm),
        "measured": analysis.diagnosis.measured,
        "mode": analysis.mode,
        "census_moment": analysis.census_moment,  # when the census behind roles and holders was taken
        "steps": _steps(analysis.steps),
        "roles": [{"role": r.role, "bytes": r.bytes, "label": r.label, "detail": r.detail} for r in analysis.roles],
        "holders": [{"root": h.root, "kind": h.kind, "bytes": h.bytes, "tensors": h.tensors, "length": h.length,
                     "created_at": _place(h.created_at), "appended_at": _place(h.appended_at), "chain": h.chain,
                     "graph_bytes": h.graph_bytes, "with_graph": h.with_graph, "survivor_bytes": h.survivor_bytes, "working_set": h.working_set,
                     "stored_at": _place(h.stored_at)}
                    for h in analysis.holders[:20]],
        "storing": [_storing(storing) for storing in analysis.storing],
        "storing_note": analysis.storing_note,
        "breakdown": [_node(node) for node in analysis.breakdown],
        "timeline": {
            "entries": timeline.entries, "peak_index": timeline.peak_index, "oom_index": timeline.oom_index,
            "points": [{"index": p.index, "time_us": p.time_us, "allocated": p.allocated, "reserved": p.reserved}
                       for p in downsample(timeline.points)],
        },
        "environment": analysis.environment,
        "source_root": analysis.source_root,
        "local_root": analysis.local_root,
        "phase_marks": [{"index": mark.index, "time_us": mark.time_us, "text": mark.text} for mark in analysis.phase_marks],
        "notes": list(analysis.notes),
        "notebook": _notebook(analysis),
    }
