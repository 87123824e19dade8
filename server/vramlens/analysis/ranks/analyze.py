"""Compare the ranks of one torchrun launch: who failed first, who only followed, and how unevenly
memory was spread across ranks (peaks, memory outside PyTorch, the lines that differ most).

``analyze_ranks(folder)`` reads the captures; ``compare_ranks`` is the pure part, on loaded
metas and analyses, for the CLI and the language server alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from vramlens.analysis.pipeline import analyze_capture
from vramlens.analysis.model import Analysis, LineStat
from vramlens.analysis.ranks.model import (
    COLLECTIVE, COMPLETED, OWN_ERROR, OWN_FAILURES, OWN_OOM, STOPPED, Imbalance, LineSpread, RankComparison, RankSummary,
)
from vramlens.capture import Capture, CaptureError, load_capture
from vramlens.capture.ranks import find_rank_captures
from vramlens.units import format_bytes as fmt

# Words in an exception that say a collective failed under the rank rather than the rank itself.
COLLECTIVE_SIGNS = ("nccl", "distbackenderror", "distnetworkerror", "diststoreerror", "watchdog",
                    "collective operation", "processgroup", "gloo", "connection closed by peer",
                    "connection reset by peer", "broken pipe", "remote process exited")
_STOPPED_STATUSES = ("terminated", "timeout", "cancelled", "interrupted")
IMBALANCE_METRICS = ("peak_allocated", "peak_reserved", "peak_driver_visible", "outside_pytorch")


def analyze_ranks(folder: str | Path, source_root: str | None = None, total_memory: int | None = None,
                  root_for: Callable[[Capture], str | None] | None = None) -> RankComparison:
    """``root_for``: each rank's source root chosen from its own capture (else ``source_root`` for all)."""
    found = find_rank_captures(folder)
    entries = []
    for rank in sorted(found.folders):
        path = found.folders[rank]
        try:
            capture = load_capture(path)
            root = root_for(capture) if root_for else source_root
            analysis, problem = analyze_capture(capture, total_memory=total_memory, source_root=root), None
        except CaptureError as error:
            analysis, problem = None, str(error)
        entries.append((str(path), found.metas[rank], analysis, problem))
    return compare_ranks(entries, found.world_size, found.missing, found.notes)


def compare_ranks(entries: list[tuple[str, dict, Analysis | None, str | None]], world_size: int | None = None,
                  missing: list[int] | None = None, notes: list[str] | None = None) -> RankComparison:
    """``entries``: (capture folder, capture.json, its analysis or None, why not) per rank."""
    ranks = sorted((_summary(*entry) for entry in entries), key=lambda summary: summary.rank)
    failing = _first_failure(ranks)
    _explain_endings(ranks, failing)
    notes = list(notes or [])
    hosts = {summary.hostname for summary in ranks if summary.hostname}
    if len(hosts) > 1 and failing is not None:
        notes.append(f"The ranks ran on {len(hosts)} hosts: which failed first is only as exact as their clocks agree.")
    for summary in ranks:
        if summary.problem:
            notes.append(f"Rank {summary.rank}: {summary.problem}")
    return RankComparison(
        ranks=ranks, world_size=world_size, failing_rank=None if failing is None else failing.rank,
        imbalance=_imbalance(ranks), lines=_line_spreads(ranks), missing_ranks=list(missing or []), notes=notes,
    )


def _summary(capture: str, meta: dict, analysis: Analysis | None, problem: str | None) -> RankSummary:
    facts = meta.get("distributed") or {}
    stats = meta.get("stats") or {}
    summary = RankSummary(
        rank=facts.get("rank"), local_rank=facts.get("local_rank"), node_rank=facts.get("node_rank"),
        hostname=facts.get("hostname"),
        device_index=facts.get("device_index", (meta.get("environment") or {}).get("device_index")),
        pid=meta.get("pid"), capture=capture, status=meta.get("status") or "unknown", exit_code=meta.get("exit_code"),
        ending=ending_of(meta), exception=_exception_line(meta), analysis=analysis, problem=problem, meta=meta,
        peak_allocated=stats.get("peak_allocated", analysis.timeline.peak_allocated if analysis else None),
        peak_reserved=stats.get("peak_reserved", analysis.timeline.peak_reserved if analysis else None),
    )
    summary.failed_at = _failure_time(meta, summary.ending)
    summary.peak_driver_visible, summary.driver_visible_scope = _driver_visible_peak(meta)
    summary.outside_pytorch, summary.outside_pytorch_moment = _outside_pytorch(meta, analysis)
    return summary


def ending_of(meta: dict) -> str:
    status = meta.get("status")
    if status == "oom":
        return OWN_OOM
    exception = meta.get("exception") or {}
    text = f"{exception.get('type', '')} {exception.get('message', '')}".lower()
    if exception and any(sign in text for sign in COLLECTIVE_SIGNS):
        return COLLECTIVE
    if status in _STOPPED_STATUSES:
        return STOPPED
    if status == "completed":
        return COMPLETED
    return OWN_ERROR  # an exception of its own, or a non-zero exit


def _ended_at(meta: dict) -> float | None:
    if meta.get("ended_epoch"):
        return meta["ended_epoch"]
    started, duration = meta.get("started_epoch"), meta.get("duration_s")
    return started + duration if started is not None and duration is not None else None


def _failure_time(meta: dict, ending: str) -> float | None:
    if ending == COMPLETED:
        return None
    if ending == OWN_OOM and (meta.get("oom") or {}).get("time"):
        return meta["oom"]["time"]
    return (meta.get("exception") or {}).get("epoch") or _ended_at(meta)


def _first_failure(ranks: list[RankSummary]) -> RankSummary | None:
    """The earliest rank to fail of its own; without one, the earliest whose collective failed."""
    for kinds in (OWN_FAILURES, (COLLECTIVE,)):
        failed = [summary for summary in ranks if summary.ending in kinds]
        if failed:
            return min(failed, key=lambda summary: (summary.failed_at is None, summary.failed_at or 0.0, summary.rank))
    return None


def _explain_endings(ranks: list[RankSummary], failing: RankSummary | None) -> None:
    for summary in ranks:
        summary.collateral = failing is not None and summary is not failing and summary.ending in (COLLECTIVE, STOPPED)
        summary.ending_text = _ending_sentence(summary, failing)


def _after(summary: RankSummary, failing: RankSummary) -> str:
    if summary.failed_at is None or failing.failed_at is None:
        return "after"
    return f"{summary.failed_at - failing.failed_at:.1f} s after"


def _ending_sentence(summary: RankSummary, failing: RankSummary | None) -> str:
    analysis = summary.analysis
    if summary.ending == OWN_OOM:
        request = analysis.oom.request if analysis and analysis.oom else None
        what = f"ran out of memory (request {fmt(request)})" if request else "ran out of memory"
        return f"{what}{' first' if summary is failing else ''}."
    if summary.ending == OWN_ERROR:
        return f"failed{' first' if summary is failing else ''} with {_exception_words(summary)}."
    if summary.ending == COMPLETED:
        return "completed."
    reason = {"terminated": "was ended by SIGTERM (torchrun stops every rank once one fails)",
              "timeout": "was ended by vramlens' --timeout", "cancelled": "was ended when the run was cancelled",
              "interrupted": "was interrupted (Ctrl-C)"}.get(summary.status, f"ended ({summary.status})")
    if summary.ending == COLLECTIVE:
        reason = f"saw its collective fail ({_exception_words(summary)})"
    if summary.collateral:
        return (f"{reason} {_after(summary, failing)} rank {failing.rank} {_failure_words(failing)}; "
                "no OOM of its own.")
    return f"{reason}."


def _exception_words(summary: RankSummary) -> str:
    if summary.exception:
        return summary.exception
    return f"exit code {summary.exit_code}" if summary.exit_code is not None else f"status {summary.status}"


def _exception_line(meta: dict) -> str | None:
    """``DistBackendError: NCCL error …``: the exception's short name and its message's first line."""
    exception = meta.get("exception") or {}
    if not exception:
        return None
    name = str(exception.get("type") or "Exception").rsplit(".", 1)[-1]
    message = str(exception.get("message") or "").strip().splitlines()
    first = message[0] if message else ""
    return f"{name}: {first[:117] + '…' if len(first) > 120 else first}" if first else name


def _failure_words(failing: RankSummary) -> str:
    return "ran out of memory" if failing.ending == OWN_OOM else "failed"


def _samples(meta: dict) -> list[dict]:
    samples = [s for s in (meta.get("nvml") or {}).get("samples") or [] if isinstance(s, dict)]
    for extra in ((meta.get("oom") or {}).get("nvml"), meta.get("exit_nvml")):
        if isinstance(extra, dict):
            samples.append(extra)
    return samples


def _driver_visible_peak(meta: dict) -> tuple[int | None, str | None]:
    """The most the driver saw: this process's own usage (NVML by PID), else the whole device's."""
    samples = _samples(meta)
    own = [s["process_used"] for s in samples if isinstance(s.get("process_used"), int)]
    if own:
        return max(own), "process"
    device = [s["device_used"] for s in samples if isinstance(s.get("device_used"), int)]
    return (max(device), "device") if device else (None, None)


def _outside_pytorch(meta: dict, analysis: Analysis | None) -> tuple[int | None, str | None]:
    """This process's device memory outside PyTorch's reserved: CUDA context, NCCL's buffers, cuBLAS
    workspaces. Both numbers from one moment: the agent's exit sample with torch's counters then."""
    exit_sample, reserved = meta.get("exit_nvml") or {}, (meta.get("stats") or {}).get("reserved")
    if isinstance(exit_sample.get("process_used"), int) and isinstance(reserved, int):
        return max(exit_sample["process_used"] - reserved, 0), "exit"
    if analysis is not None and analysis.accounting.context_and_libraries is not None:
        return analysis.accounting.context_and_libraries, analysis.accounting.moment
    return None, None


def _imbalance(ranks: list[RankSummary]) -> dict[str, Imbalance]:
    result = {}
    for metric in IMBALANCE_METRICS:
        values = {summary.rank: getattr(summary, metric) for summary in ranks if getattr(summary, metric) is not None}
        if len(values) < 2:
            continue
        high = max(values, key=lambda rank: (values[rank], -rank))
        low = min(values, key=lambda rank: (values[rank], -rank))  # on a tie, another rank than the max
        result[metric] = Imbalance(metric, high, values[high], low, values[low])
    return result


def _line_key(line: LineStat, root: str | None) -> tuple:
    if line.path is None:
        return None, None, line.function
    path = line.path.replace("\\", "/")
    if root:
        prefix = root.replace("\\", "/").rstrip("/") + "/"
        if path.startswith(prefix):
            path = path[len(prefix):]
    return path, line.line, line.function


def _line_spreads(ranks: list[RankSummary]) -> list[LineSpread]:
    """Every line any rank allocated from, with its live bytes on each analyzed rank (0 where absent)."""
    analyzed = [summary for summary in ranks if summary.analysis is not None]
    spreads: dict[tuple, LineSpread] = {}
    for summary in analyzed:
        for line in summary.analysis.lines:
            key = _line_key(line, summary.analysis.source_root)
            spread = spreads.get(key)
            if spread is None:
                spread = spreads[key] = LineSpread(path=key[0], line=key[1], function=key[2], local_path=None,
                                                   live_by_rank={s.rank: 0 for s in analyzed},
                                                   allocated_by_rank={s.rank: 0 for s in analyzed})
            spread.live_by_rank[summary.rank] += line.live_bytes
            spread.allocated_by_rank[summary.rank] += line.allocated_bytes
            spread.local_path = spread.local_path or line.local_path
    return sorted(spreads.values(), key=lambda spread: (-spread.spread, spread.path or "", spread.line or 0))

