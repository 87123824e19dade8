"""--json for a folder of ranks: the shown rank's schema-1 object, plus a ``ranks`` member.

A consumer of schema version 1 reads the top level exactly as for one capture (it describes the
failing rank, else the rank that used most memory); the comparison of ranks is only added.
"""

from __future__ import annotations

from vramlens.analysis.rendering.json_export import to_json
from vramlens.analysis.ranks.model import LineSpread, RankComparison, RankSummary

TOP_LINE_SPREADS = 50


def _by_rank(values: dict[int, int]) -> list[dict]:
    return [{"rank": rank, "bytes": value} for rank, value in sorted(values.items())]


def _spread(spread: LineSpread) -> dict:
    return {
        "path": spread.path, "local_path": spread.local_path, "line": spread.line, "function": spread.function,
        "spread": spread.spread, "high_rank": spread.high_rank, "low_rank": spread.low_rank,
        "live_by_rank": _by_rank(spread.live_by_rank), "allocated_by_rank": _by_rank(spread.allocated_by_rank),
    }


def _rank(summary: RankSummary) -> dict:
    return {
        "rank": summary.rank, "local_rank": summary.local_rank, "node_rank": summary.node_rank,
        "hostname": summary.hostname, "device_index": summary.device_index, "pid": summary.pid,
        "capture": summary.capture, "status": summary.status, "exit_code": summary.exit_code,
        "ending": summary.ending, "ending_text": summary.ending_text, "exception": summary.exception,
        "failed_at": summary.failed_at, "collateral": summary.collateral,
        "peak_allocated": summary.peak_allocated, "peak_reserved": summary.peak_reserved,
        "peak_driver_visible": summary.peak_driver_visible, "driver_visible_scope": summary.driver_visible_scope,
        "outside_pytorch": summary.outside_pytorch, "outside_pytorch_moment": summary.outside_pytorch_moment,
        "problem": summary.problem,
        "analysis": None if summary.analysis is None else to_json(summary.analysis),
    }


def ranks_json(comparison: RankComparison) -> dict:
    return {
        "world_size": comparison.world_size,
        "failing_rank": comparison.failing_rank,
        "shown_rank": comparison.ranks[comparison.default_index].rank if comparison.ranks else None,
        "missing_ranks": list(comparison.missing_ranks),
        "per_rank": [_rank(summary) for summary in comparison.ranks],
        "imbalance": {
            metric: {"max_rank": item.max_rank, "max": item.max_bytes, "min_rank": item.min_rank, "min": item.min_bytes,
                     "ratio": None if item.ratio is None else round(item.ratio, 3)}
            for metric, item in comparison.imbalance.items()
        },
        "lines": [_spread(spread) for spread in comparison.lines[:TOP_LINE_SPREADS] if spread.spread > 0],
        "notes": list(comparison.notes),
    }


def comparison_to_json(comparison: RankComparison) -> dict:
    """The shown rank's analysis (schema version 1, unchanged) with ``ranks`` added."""
    shown = comparison.ranks[comparison.default_index].analysis if comparison.ranks else None
    result = to_json(shown) if shown is not None else {"schema_version": 1}
    result["ranks"] = ranks_json(comparison)
    return result
