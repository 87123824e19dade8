"""The --json schema (docs/analysis-json.md). Bytes stay integers; unknown values are null."""

from __future__ import annotations

from vramlens.analysis.model import Analysis, LineStat

SCHEMA_VERSION = 1
TIMELINE_POINTS = 200


def _line(line: LineStat) -> dict:
    return {
        "path": line.path, "local_path": line.local_path, "line": line.line, "function": line.function,
        "live_bytes": line.live_bytes, "share": round(line.share, 4), "allocated_bytes": line.allocated_bytes,
        "count": line.count, "growing": line.growing, "growth_bytes": line.growth_bytes, "live_blocks": line.live_blocks,
        "size_histogram": [{"size": size, "count": count} for size, count in line.size_histogram],
        "call_path": line.call_path, "source": line.source,
    }


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
            {"action": r.action, "reason": r.reason, "experiment": r.experiment} for r in analysis.recommendations
        ],
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
    }
