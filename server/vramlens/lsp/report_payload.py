"""The `vramlens/report` notification's payload: the report, its lines and the timeline series.

Pure (no pygls): built from a loaded capture; ``to_uri`` turns a local path into the editor's URI.
"""

from __future__ import annotations

import os
from typing import Callable

from vramlens.analysis import to_json
from vramlens.analysis.rendering.json_export import downsample
from vramlens.analysis.model import Analysis
from vramlens.analysis.rendering.redact import Redaction, hosts_of, redact_counted
from vramlens.analysis.ranks.model import OWN_FAILURES, RankComparison
from vramlens.analysis.rendering.report import build_report
from vramlens.analysis.rendering.experiment_text import render_text
from vramlens.lsp.capture_store import LoadedCapture

TOP_LINES = 20


def report_title(analysis: Analysis, meta: dict, capture_path: str) -> str:
    name = os.path.basename(meta.get("script") or capture_path.rstrip("/"))
    return f"{name} — {analysis.outcome_text}"


# The OOM observer asks for an NVML reading as soon as the allocation fails; it arrives within milliseconds.
OOM_READING_WINDOW_S = 1.0


def timeline_series(analysis: Analysis, meta: dict) -> dict:
    """Allocated and reserved from the replay, driver-visible use from NVML, in seconds from the first point."""
    timeline = analysis.timeline
    points = downsample(timeline.points)
    times = [p.time_us for p in points if p.time_us is not None]
    start_us = min(times) if times else None

    def seconds(time_us: int | None, index: int) -> float:
        if start_us is None or time_us is None:
            return float(index)  # an old torch without times: the trace position stands in
        return round((time_us - start_us) / 1e6, 6)

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
        "reserved": [[seconds(p.time_us, p.index), p.reserved] for p in points],
        "driverUsed": driver,
        "oomAt": oom_at,
        "peakAt": seconds(timeline.peak_time_us, timeline.peak_index) if timeline.peak_index is not None else None,
        "phaseMarks": marks,  # the user's phase marks (torch 2.14's annotate), in seconds like the rest
    }


def report_lines(analysis: Analysis, to_uri: Callable[[str], str]) -> list[dict]:
    """The report's top lines; a notebook cell's line has no file to open (``uri`` null) but names its cell."""
    shown = [line for line in analysis.lines if (line.local_path or line.cell) and line.line and line.live_bytes > 0][:TOP_LINES]
    return [{"label": line.label, "uri": to_uri(line.local_path) if line.local_path else None, "line": line.line - 1,
             "cell": line.cell.index if line.cell else None,
             "liveBytes": line.live_bytes, "share": round(line.share, 4)} for line in shown]


def experiment_title(experiment: dict) -> str:
    return f"{os.path.basename(experiment.get('script') or '')} — controlled experiment"


def experiment_markdown(experiment: dict) -> str:
    """An experiment without a capture here: its table as `vramlens experiment` prints it."""
    return f"# {experiment_title(experiment)}\n\n```text\n{render_text(experiment)}```\n"


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
        roots = [loaded.view.analysis.user_root, loaded.view.analysis.local_root, *roots]
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
             "shown": summary.analysis is not None} for summary in comparison.ranks]


def report_payload(loaded: LoadedCapture, to_uri: Callable[[str], str], redacted: bool = False) -> dict:
    view = loaded.view
    if view is None:
        payload = {"workspaceFolder": loaded.folder_uri, "capture": loaded.path, "redacted": redacted,
                   "title": experiment_title(loaded.experiment or {}), "analysis": None, "lines": [], "series": None,
                   "markdown": report_markdown(loaded), "ranks": None, "experiment": loaded.experiment}
        return _redacted_payload(payload, loaded) if redacted else payload
    analysis = view.analysis
    payload = {
        "workspaceFolder": loaded.folder_uri,
        "capture": loaded.path,
        "redacted": redacted,
        "title": report_title(analysis, view.meta, loaded.path),
        "analysis": to_json(analysis),
        "lines": report_lines(analysis, to_uri),
        "series": timeline_series(analysis, view.meta),
        "markdown": report_markdown(loaded),
        "ranks": None,
        "experiment": loaded.experiment,
    }
    if loaded.comparison is not None:
        payload["ranks"] = rank_rows(loaded.comparison)
        payload["selectedRank"] = view.rank
        payload["failingRank"] = loaded.comparison.failing_rank
    return _redacted_payload(payload, loaded) if redacted else payload


def _redacted_payload(payload: dict, loaded: LoadedCapture) -> dict:
    """Every string that may name a path goes through the report's redaction; links to local files are dropped."""
    counts = _redaction(payload["markdown"], loaded).counts
    shared = _redacted_strings(payload, loaded)
    shared.update(workspaceFolder=None, lines=[dict(line, uri=None) for line in shared["lines"]], redactions=counts,
                  markdown=f"{shared['markdown']}\n> {Redaction('', counts).summary()}\n")
    return shared


def _redacted_strings(value, loaded: LoadedCapture):
    if isinstance(value, str):
        return _redacted(value, loaded)
    if isinstance(value, list):
        return [_redacted_strings(item, loaded) for item in value]
    if isinstance(value, dict):
        return {key: _redacted_strings(item, loaded) for key, item in value.items()}
    return value
