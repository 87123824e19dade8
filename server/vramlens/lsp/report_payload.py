"""The `vramlens/report` notification's payload: the report, its lines and the timeline series.

Pure (no pygls): built from a loaded capture; ``to_uri`` turns a local path into the editor's URI.
"""

from __future__ import annotations

import bisect
import os
from typing import Callable

from vramlens.analysis import to_json
from vramlens.analysis.rendering.json_export import downsample
from vramlens.analysis.load.ending import moment_short
from vramlens.analysis.model import Analysis
from vramlens.analysis.rendering.redact import Redaction, hosts_of, redact_counted
from vramlens.analysis.ranks.model import OWN_FAILURES, RankComparison
from vramlens.analysis.rendering.report import build_report
from vramlens.analysis.rendering.report_paths import report_roots
from vramlens.analysis.rendering.experiment_text import render_text
from vramlens.analysis.rendering.experiment_view import experiment_json
from vramlens.analysis.rendering.ranks_text import RANK_COLUMNS, rank_cells
from vramlens.analysis.rendering.markdown_safe import code_block, prose
from vramlens.lsp.capture_store import LoadedCapture
from vramlens.analysis.rendering.verdict_view import cause_text
from vramlens.analysis.model import LineHistory
from vramlens.analysis.rendering.accounting_view import (
    accounting_json, accounting_view, device_total, device_words, limit_words,
)
from vramlens.analysis.rendering.line_view import line_view_json, line_views, recorded_place
from vramlens.analysis.rendering.verdict_view import verdict_json, verdict_view
from vramlens.analysis.rendering.memory_view import holder_rows, role_rows
from vramlens.analysis.rendering.notebook_text import KEPT_TITLE, cell_rows, cells_title, holder_lines
from vramlens.capture.format import SNAPSHOT_FILE
from vramlens.units import format_bytes as fmt

TOP_LINES = 20


def report_title(analysis: Analysis, meta: dict, capture_path: str) -> str:
    name = os.path.basename(meta.get("script") or capture_path.rstrip("/"))
    return f"{name} — {analysis.outcome_text}"


# The OOM observer asks for an NVML reading as soon as the allocation fails; it arrives within milliseconds.
OOM_READING_WINDOW_S = 1.0


def series_clock(analysis: Analysis):
    """Seconds from the first timeline point (the trace position where an old torch recorded no times)."""
    times = [p.time_us for p in downsample(analysis.timeline.points) if p.time_us is not None]
    start_us = min(times) if times else None

    def seconds(time_us: int | None, index: int) -> float:
        if start_us is None or time_us is None:
            return float(index)
        return round((time_us - start_us) / 1e6, 6)

    return seconds, start_us


def timeline_series(analysis: Analysis, meta: dict, tops: list | None = None) -> dict:
    """Allocated and reserved from the replay, driver-visible use from NVML, in seconds from the first point.

    ``tops``: per point, (label, bytes) of the user line holding most at that moment, or None.
    """
    timeline = analysis.timeline
    points = downsample(timeline.points)
    seconds, start_us = series_clock(analysis)
    accounting = analysis.accounting

    oom_at = seconds(timeline.oom_time_us, timeline.oom_index) if timeline.oom_index is not None else None
    marks = [{"time": seconds(mark.time_us, mark.index), "index": mark.index, "text": mark.text}
             for mark in analysis.phase_marks]
    driver = []
    if start_us is not None:
        for sample in (meta.get("nvml") or {}).get("samples") or ():
            if sample.get("epoch") is not None and sample.get("device_used") is not None:
                at = round(sample["epoch"] - start_us / 1e6, 3)
                if sample.get("phase") == "oom" and oom_at is not None and 0 <= at - oom_at < OOM_READING_WINDOW_S:
                    at = oom_at  # read moments after the failure, of memory the failure did not change
                driver.append([at, sample["device_used"]])
    return {
        "allocated": [[seconds(p.time_us, p.index), p.allocated] for p in points],
        "pointIndex": [p.index for p in points],  # each point's trace position: what a click asks "live at" of
        "reserved": [[seconds(p.time_us, p.index), p.reserved] for p in points],
        "driverUsed": driver,
        "oomAt": oom_at,
        "peakAt": seconds(timeline.peak_time_us, timeline.peak_index) if timeline.peak_index is not None else None,
        "limit": accounting.limit,
        "limitIsCap": accounting.limit_is_cap,
        # The device total the accounting and the CLI print (torch's), so the view shows one figure, in words
        # made once (accounting_view.py): the plot draws these labels and formats no size itself.
        "deviceTotal": device_total(accounting),
        "limitLabel": limit_words(accounting),
        "deviceTotalLabel": device_words(accounting),
        "sampleInterval": sampling_interval(meta),
        "tops": [[label, live] if label else None for label, live in (top or (None, None) for top in tops)]
                if tops and len(tops) == len(points) else None,
        "steps": step_bands(analysis, seconds),
        "timeUnit": "s" if start_us is not None else "entry",
        "phaseMarks": marks,  # the user's phase marks (torch 2.14's annotate), in seconds like the rest
        "marks": [{"at": mark["time"], "label": mark["text"]} for mark in marks],  # as the timeline draws them
    }


def sampling_interval(meta: dict) -> float | None:
    """NVML's sampling period as the periodic readings show it (their median gap), in seconds."""
    times = sorted(sample["epoch"] for sample in (meta.get("nvml") or {}).get("samples") or ()
                   if sample.get("phase") == "periodic" and isinstance(sample.get("epoch"), (int, float)))
    gaps = sorted(later - earlier for earlier, later in zip(times, times[1:]) if later > earlier)
    return round(gaps[len(gaps) // 2], 3) if gaps else None


def step_bands(analysis: Analysis, seconds) -> list[dict]:
    """The run's iterations on the timeline's clock, for light bands behind the lines. A step known by its
    trace positions only is timed by the timeline point at or before each position."""
    model = analysis.steps
    if model is None:
        return []
    points = analysis.timeline.points
    indices = [point.index for point in points]

    def when(time_us: int | None, index: int) -> float:
        if time_us is None and points:
            at = max(0, bisect.bisect_right(indices, index) - 1)
            time_us = points[at].time_us
        return seconds(time_us, index)

    return [{"number": step.number, "kind": step.kind, "complete": step.complete,
             "start": when(step.start_time_us, step.start_index), "end": when(step.end_time_us, step.end_index),
             "floorAllocated": step.floor_allocated, "peakAllocated": step.peak_allocated} for step in model.steps]


def snapshot_file(path: str | None) -> str | None:
    """The `_dump_snapshot` pickle of a capture (a folder's snapshot.pickle, or the raw pickle itself)."""
    if not path:
        return None
    candidate = os.path.join(path, SNAPSHOT_FILE) if os.path.isdir(path) else path
    return candidate if os.path.isfile(candidate) and candidate.endswith(".pickle") else None


def script_uri(analysis: Analysis, meta: dict, to_uri: Callable[[str], str]) -> str | None:
    """The recorded script as a file here (what a confirming run executes again), when it was mapped."""
    script = meta.get("script")
    local = next((line.local_path for line in analysis.lines if script and line.path == script and line.local_path), None)
    return to_uri(local) if local else None


def line_links(analysis: Analysis, to_uri: Callable[[str], str]) -> dict[str, dict]:
    """`train.py:20` -> where it is here, for every attributed user line found on this machine:
    the report view turns each such token of its text into a link."""
    links: dict[str, dict] = {}
    for line in [*analysis.lines, *analysis.storing]:  # a storing line need not have allocated anything
        if line.local_path and line.line and line.label not in links:
            links[line.label] = {"label": line.label, "uri": to_uri(line.local_path), "line": line.line - 1}
    return links


def recommendations(analysis: Analysis, links: dict[str, dict]) -> list[dict]:
    """What to try, each with the actions an editor can offer as buttons (an open_line action carries its URI)."""
    place = recorded_place(analysis)

    def action(item) -> dict:
        entry = {"kind": item.kind, "title": item.title, "arguments": dict(item.arguments)}
        if item.kind == "open_line":
            path, line = item.arguments.get("path"), item.arguments.get("line")
            label = place(path, line) if path else None  # the links' own labels: a cell's line by its cell
            if label in links:
                entry.update(uri=links[label]["uri"], line=links[label]["line"])
        return entry

    return [{"action": r.action, "reason": r.reason, "experiment": r.experiment, "command": r.command,
             "actions": [action(a) for a in r.actions]} for r in analysis.recommendations]


def diagnosis_payload(analysis: Analysis) -> dict:
    diagnosis = analysis.diagnosis
    confirm = diagnosis.confirm
    return {"cause": diagnosis.cause, "causeText": cause_text(diagnosis.cause), "confidence": diagnosis.confidence,
            "confidenceLabel": diagnosis.confidence_label, "alternative": diagnosis.alternative,
            "alternativeText": cause_text(diagnosis.alternative) if diagnosis.alternative else None,
            "measured": diagnosis.measured,
            "confirm": None if confirm is None else {"question": confirm.question, "command": confirm.command,
                                                     "expectation": confirm.expectation, "variants": confirm.variants}}


def frame_tree(node, to_uri: Callable[[str], str], bytes_of: int | None = None) -> dict:
    """A node of the icicle, with its figure as text; ``bytes_of`` replaces a root's bytes by its line's
    live bytes, so the icicle, the Top lines and the hint show one figure for one line."""
    size = node.bytes if bytes_of is None else bytes_of
    return {"label": node.label, "path": node.path, "line": node.line, "bytes": size, "bytesText": fmt(size),
            "uri": to_uri(node.local_path) if node.local_path else None,
            "children": [frame_tree(child, to_uri) for child in node.children]}


def storing_row(storing, to_uri: Callable[[str], str]) -> dict:
    """A line that keeps the memory, with where it is here (the report links it like its other lines)."""
    return {"label": storing.label, "holder": storing.holder, "target": storing.target, "kind": storing.kind,
            "uri": to_uri(storing.local_path) if storing.local_path else None, "line": storing.line - 1,
            "source": storing.source, "bytes": storing.bytes, "growthBytes": storing.growth_bytes,
            "allocatedAt": list(storing.allocated_at) if storing.allocated_at else None}


def breakdown_trees(analysis: Analysis, to_uri: Callable[[str], str]) -> list[dict]:
    live = {(line.path, line.line): line.live_bytes for line in analysis.lines if line.path is not None}
    return [frame_tree(node, to_uri, live.get((node.path, node.line))) for node in analysis.breakdown]


def memory_views(analysis: Analysis, to_uri: Callable[[str], str]) -> dict:
    """What the memory is (roles), who holds it (holders) and the library frames below each top line."""
    place = recorded_place(analysis)
    rows = holder_rows(analysis, place, limit=None)
    return {
        "roles": [{"role": r.role, "bytes": r.bytes, "label": r.label, "detail": r.detail, "figure": f"{row.bytes} · {row.share}"}
                  for r, row in zip(analysis.roles, role_rows(analysis))],
        "holders": [{"root": h.root, "kind": h.kind, "bytes": h.bytes, "tensors": h.tensors, "length": h.length,
                     "createdAt": list(h.created_at) if h.created_at else None,
                     "appendedAt": list(h.appended_at) if h.appended_at else None, "chain": list(h.chain),
                     "storedAt": list(h.stored_at) if h.stored_at else None, "survivorBytes": h.survivor_bytes,
                     "workingSet": h.working_set, "graphBytes": h.graph_bytes,
                     "kindText": row.what, "bytesText": row.bytes, "tensorsText": row.tensors, "filledAt": row.filled_at}
                    for h, row in zip(analysis.holders, rows)],
        "storing": [storing_row(storing, to_uri) for storing in analysis.storing],
        "storingNote": analysis.storing_note,
        "holderColumns": ["held by", "what", "bytes", "tensors", "filled at"],
        "breakdown": breakdown_trees(analysis, to_uri),
        "mode": analysis.mode,
    }


def notebook_section(analysis: Analysis) -> dict | None:
    """A notebook capture's cells in the order they ran and what the kernel itself keeps (with the command
    that frees each), the rows the CLI prints."""
    facts = analysis.notebook
    if facts is None:
        return None
    place = recorded_place(analysis)
    return {"title": cells_title(facts), "cells": cell_rows(facts, place), "keptTitle": KEPT_TITLE,
            "kept": holder_lines(facts, place)}


def unmapped(analysis: Analysis) -> dict | None:
    """A capture whose user lines name no file here: what was recorded, so the user can choose the folder."""
    user = [line for line in analysis.lines if line.path and line.live_bytes > 0]
    if not user or any(line.local_path or (line.cell is not None and line.cell.notebook) for line in user):
        return None
    return {"recordedRoot": analysis.source_root, "files": sorted({line.path for line in user})[:5]}


def report_lines(analysis: Analysis, to_uri: Callable[[str], str], history: LineHistory | None = None) -> list[dict]:
    """Every annotated line (live at the moment or churned), with the labels of its view, its numbers for
    sorting, and its live bytes at each step's end (the sparkline); a notebook cell's line has no file to
    open (``uri`` null) but names its cell."""
    views = line_views(analysis)
    complete = [step.complete for step in analysis.steps.steps] if analysis.steps else []
    shown = [line for line in analysis.lines if (line.local_path or line.cell) and line.line
             and (line.live_bytes > 0 or line.allocated_bytes > 0)][:TOP_LINES]
    rows = []
    for line in shown:
        key = (line.path, line.line)
        steps = (history.at_steps.get(key) if history else None) or []
        peak = max(line.live_bytes, (history.peaks.get(key, 0) if history else 0))
        growth = growth_per_step([live for live, done in zip(steps, complete) if done])
        rows.append({
            "label": line.label, "uri": to_uri(line.local_path) if line.local_path else None, "line": line.line - 1,
            "cell": line.cell.index if line.cell else None, "liveBytes": line.live_bytes, "share": round(line.share, 4),
            "peakBytes": peak, "growthPerStep": growth, "allocatedBytes": line.allocated_bytes, "steps": steps,
            "cells": {"live": views[id(line)].figure, "peak": fmt(peak), "growth": _growth_text(growth),
                      "allocated": fmt(line.allocated_bytes)},
            **line_view_json(views[id(line)]),
        })
    return rows


def line_columns(analysis: Analysis) -> list[dict]:
    """The per-line table's sortable columns: key (of ``cells`` and of the row's number) and label."""
    moment = f"live {moment_short(analysis.accounting.moment)}"
    return [{"key": "live", "sortBy": "liveBytes", "label": moment}, {"key": "peak", "sortBy": "peakBytes", "label": "peak"},
            {"key": "growth", "sortBy": "growthPerStep", "label": "per step"},
            {"key": "allocated", "sortBy": "allocatedBytes", "label": "allocated in total"}]


def growth_per_step(at_steps: list[int]) -> int | None:
    """How much a line's live bytes rose per step between the first and the last completed step's end
    (None: fewer than two)."""
    if len(at_steps) < 2:
        return None
    return round((at_steps[-1] - at_steps[0]) / (len(at_steps) - 1))


def _growth_text(growth: int | None) -> str:
    if growth is None:
        return "—"
    return f"+{fmt(growth)}" if growth > 0 else ("0" if growth == 0 else fmt(growth))


def experiment_title(experiment: dict) -> str:
    return f"{os.path.basename(experiment.get('script') or '')} — controlled experiment"


def experiment_markdown(experiment: dict) -> str:
    """An experiment without a capture here: its table as `vramlens experiment` prints it."""
    return f"# {prose(experiment_title(experiment))}\n\n{code_block(render_text(experiment), 'text')}\n"


def report_markdown(loaded: LoadedCapture, svg_name: str | None = None, redacted: bool = False) -> str:
    view = loaded.view
    if view is None:
        text = experiment_markdown(loaded.experiment or {})
    else:
        text = build_report(view.analysis, view.meta, svg_name, report_title(view.analysis, view.meta, loaded.path))
    if not redacted:
        return text
    redaction = _redaction(text, loaded)
    return f"{redaction.text}\n> {redaction.summary()}\n"


def _redaction(text: str, loaded: LoadedCapture) -> Redaction:
    roots = [loaded.source_root]
    hosts = []
    if loaded.view is not None:
        roots = [*report_roots(loaded.view.analysis, loaded.view.meta).every, *roots]
        hosts = hosts_of(loaded.view.meta)
    if loaded.comparison is not None:
        hosts += [summary.hostname for summary in loaded.comparison.ranks if summary.hostname]
    return redact_counted(text, roots, hosts)


def _redacted(text: str, loaded: LoadedCapture) -> str:
    return _redaction(text, loaded).text


def rank_rows(comparison: RankComparison) -> list[dict]:
    """The report's rank table: how each rank ended and what it used."""
    return [{"rank": summary.rank, "failed": summary.ending in OWN_FAILURES,
             "failing": summary.rank == comparison.failing_rank, "ending": summary.ending,
             "endingText": summary.ending_text, "collateral": summary.collateral,
             "node": summary.node_rank, "hostname": summary.hostname,
             "peakAllocated": summary.peak_allocated, "peakReserved": summary.peak_reserved,
             "driverUsed": summary.peak_driver_visible, "outsidePytorch": summary.outside_pytorch,
             "cells": rank_cells(summary, summary.rank == comparison.failing_rank),
             "shown": summary.analysis is not None} for summary in comparison.ranks]


def report_payload(loaded: LoadedCapture, to_uri: Callable[[str], str], redacted: bool = False) -> dict:
    view = loaded.view
    if view is None:
        payload = {"workspaceFolder": loaded.folder_uri, "capture": loaded.path, "redacted": redacted,
                   "title": experiment_title(loaded.experiment or {}), "analysis": None, "lines": [], "series": None,
                   "markdown": report_markdown(loaded), "ranks": None, "experiment": loaded.experiment,
                   "experimentView": experiment_json(loaded.experiment)}
        return _redacted_payload(payload, loaded) if redacted else payload
    analysis = view.analysis
    links = line_links(analysis, to_uri)
    payload = {
        "workspaceFolder": loaded.folder_uri,
        "capture": loaded.path,
        "redacted": redacted,
        "title": report_title(analysis, view.meta, loaded.path),
        "analysis": to_json(analysis),
        "diagnosis": diagnosis_payload(analysis),
        "recommendations": recommendations(analysis, links),
        "links": list(links.values()),
        "lines": report_lines(analysis, to_uri, view.history),
        "lineColumns": line_columns(analysis),
        "verdict": verdict_json(verdict_view(analysis)),
        "accounting": accounting_json(accounting_view(analysis)),
        "segments": view.segments,
        "notebook": notebook_section(analysis),
        "snapshotFile": snapshot_file(loaded.shown_capture_path()),
        "series": timeline_series(analysis, view.meta, view.tops),
        **memory_views(analysis, to_uri),
        "unmapped": unmapped(analysis),
        "confirmable": bool(view.meta.get("script")),
        "scriptUri": script_uri(analysis, view.meta, to_uri),
        "markdown": report_markdown(loaded),
        "ranks": None,
        "experiment": loaded.experiment,
        "experimentView": experiment_json(loaded.experiment),
    }
    if loaded.comparison is not None:
        payload["ranks"] = rank_rows(loaded.comparison)
        payload["rankColumns"] = RANK_COLUMNS
        payload["selectedRank"] = view.rank
        payload["failingRank"] = loaded.comparison.failing_rank
    return _redacted_payload(payload, loaded) if redacted else payload


def _redacted_payload(payload: dict, loaded: LoadedCapture) -> dict:
    """Every string that may name a path goes through the report's redaction; links to local files are dropped."""
    counts = _redaction(payload["markdown"], loaded).counts
    shared = _redacted_strings(payload, loaded)
    shared.update(workspaceFolder=None, scriptUri=None, snapshotFile=None, lines=[dict(line, uri=None) for line in shared["lines"]], links=[],
                  redactions=counts, markdown=f"{shared['markdown']}\n> {Redaction('', counts).summary()}\n")
    for recommendation in shared.get("recommendations") or ():
        for action in recommendation["actions"]:
            action.pop("uri", None)
    shared["breakdown"] = [_without_uris(node) for node in shared.get("breakdown") or ()]
    return shared


def _without_uris(node: dict) -> dict:
    return dict(node, uri=None, children=[_without_uris(child) for child in node["children"]])


def _redacted_strings(value, loaded: LoadedCapture):
    if isinstance(value, str):
        return _redacted(value, loaded)
    if isinstance(value, list):
        return [_redacted_strings(item, loaded) for item in value]
    if isinstance(value, dict):
        return {key: _redacted_strings(item, loaded) for key, item in value.items()}
    return value
