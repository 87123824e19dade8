"""The text of `vramlens analyze` for a folder of ranks: the comparison, then the shown rank in full."""

from __future__ import annotations

from vramlens.analysis.ranks.model import RankComparison
from vramlens.safe_text import one_line
from vramlens.units import format_bytes as fmt

TOP_SPREADS = 5
# The report view's rank table (narrower than the CLI's: no node, host or GPU columns).
RANK_COLUMNS = ["rank", "how it ended", "peak allocated", "peak reserved", "driver-visible peak", "outside PyTorch"]
ENDINGS = {"oom": "out of memory", "error": "failed (its own error)", "collective_error": "collective failed",
           "stopped": "stopped", "completed": "completed"}
_METRIC_WORDS = {"peak_allocated": "peak allocated", "peak_reserved": "peak reserved",
                 "peak_driver_visible": "peak driver-visible", "outside_pytorch": "outside PyTorch"}


def _size(value: int | None) -> str:
    return fmt(value) if value is not None else "unknown"


def rank_cells(summary, failing: bool) -> list[str]:
    """One rank's cells in RANK_COLUMNS order: how it ended (and whether it failed first) and what it used."""
    ending = ENDINGS.get(summary.ending, summary.ending or "—")
    if failing:
        ending += " — failed first"
    elif summary.collateral:
        ending += " after the failing rank"
    return [f"rank {summary.rank}", ending, fmt(summary.peak_allocated) if summary.peak_allocated is not None else "—",
            *(fmt(value) if value is not None else "—"
              for value in (summary.peak_reserved, summary.peak_driver_visible, summary.outside_pytorch))]


def _table(comparison: RankComparison) -> list[str]:
    header = ("rank", "node", "host", "gpu", "ending", "peak allocated", "peak reserved", "driver-visible", "outside PyTorch")
    rows = [header]
    for summary in comparison.ranks:
        ending = summary.ending + (" (followed)" if summary.collateral else "")
        rows.append((str(summary.rank), "?" if summary.node_rank is None else str(summary.node_rank),
                     summary.hostname or "?", "?" if summary.device_index is None else str(summary.device_index),
                     ending, _size(summary.peak_allocated), _size(summary.peak_reserved),
                     _size(summary.peak_driver_visible), _size(summary.outside_pytorch)))
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    return ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def render_ranks_text(comparison: RankComparison, path: str) -> str:
    count = len(comparison.ranks)
    of = f" of {comparison.world_size}" if comparison.world_size else ""
    out = [f"VRAM Lens — {path} ({count} rank{'s' if count != 1 else ''}{of})"]
    failing = comparison.failing_rank
    if failing is not None:
        summary = comparison.ranks[comparison.index_of(failing)]
        out.append(f"Failing rank: {failing} — {summary.ending_text}")
    else:
        out.append("No rank failed.")
    out += ["", *_table(comparison), ""]
    out += [f"Rank {summary.rank} {summary.ending_text}" for summary in comparison.ranks if summary.rank != failing]
    if comparison.imbalance:
        out += ["", "Imbalance across ranks (max / min)"]
        for metric, item in comparison.imbalance.items():
            ratio = f" = {item.ratio:.2f}×" if item.ratio is not None else ""
            out.append(f"  {_METRIC_WORDS[metric]:<20} rank {item.max_rank} {fmt(item.max_bytes)} / "
                       f"rank {item.min_rank} {fmt(item.min_bytes)}{ratio}")
    outside = [summary for summary in comparison.ranks if summary.outside_pytorch is not None]
    if outside:
        out += ["", "Outside PyTorch per rank (NVML process usage − PyTorch reserved: CUDA context, NCCL buffers, libraries)"]
        out += [f"  rank {summary.rank}: {fmt(summary.outside_pytorch)} (at the {summary.outside_pytorch_moment})"
                for summary in outside]
    spreads = [spread for spread in comparison.lines if spread.spread > 0][:TOP_SPREADS]
    if spreads:
        out += ["", "Lines whose live bytes differ most between ranks (at each rank's OOM, else its peak)"]
        for number, spread in enumerate(spreads, 1):
            where = f"{spread.path}:{spread.line} in {spread.function}" if spread.path else spread.function
            values = ", ".join(f"rank {rank} {fmt(value)}" for rank, value in sorted(spread.live_by_rank.items()))
            out.append(f"  {number}. {where}: spread {fmt(spread.spread)} ({values})")
    out += [f"Note: {note}" for note in comparison.notes]
    return "\n".join(map(one_line, out)) + "\n"
