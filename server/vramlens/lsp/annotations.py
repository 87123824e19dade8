"""Per-line figures from an analysis: the hint text and the hover Markdown for each attributed line.

Pure (no pygls): the LSP adapters only place these on the document's current lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.safe_text import one_line
from vramlens.analysis.model import Analysis, LineStat
from vramlens.units import format_bytes as fmt

STALE_TEXT = "stale · changed since the capture"
_MOMENT_SHARE = {"oom": "at the OOM", "peak": "of peak", "end": "at the end"}
_MOMENT_LIVE = {"oom": "live at the OOM", "peak": "live at the peak", "end": "live at the end of the trace"}
LARGEST_BLOCKS = 5


@dataclass(frozen=True)
class LineAnnotation:
    """One attributed line of one file, as recorded (``line`` is 1-based, in the file the run executed)."""

    local_path: str
    line: int
    source: str | None  # the line's text when the capture was loaded, to tell when it changes
    text: str
    share: float
    live_bytes: int
    growing: bool
    growth_bytes: int
    hover: str
    function: str


def hint_text(line: LineStat, moment: str) -> str:
    """`3.20 GiB live · 41% of peak · growing`."""
    parts = [f"{fmt(line.live_bytes)} live", f"{line.share:.0%} {_MOMENT_SHARE.get(moment, 'of peak')}"]
    if line.growing:
        parts.append("growing")
    elif line.live_bytes == 0:
        parts[0] = f"{fmt(line.allocated_bytes)} allocated, none live"
        parts.pop()
    return " · ".join(parts)


def hover_markdown(line: LineStat, moment: str) -> str:
    """Live and total bytes, count, growth, the largest blocks and the call path into torch."""
    where = f"{one_line(line.label)} in `{one_line(line.function).replace('`', chr(39))}`"
    out = [f"**VRAM Lens** — {where}", ""]
    out.append(f"- **{fmt(line.live_bytes)}** {_MOMENT_LIVE.get(moment, 'live')} ({line.share:.0%} of live bytes), "
               f"in {line.live_blocks} block{'' if line.live_blocks == 1 else 's'}")
    out.append(f"- {fmt(line.allocated_bytes)} allocated over the recorded history, in {line.count} "
               f"allocation{'' if line.count == 1 else 's'}")
    if line.growing:
        out.append(f"- growing: it holds {fmt(line.growth_bytes)} that accumulated across steps")
    else:
        out.append("- not growing across steps")
    largest = sorted(line.size_histogram, key=lambda item: -item[0])[:LARGEST_BLOCKS]
    if largest:
        out.append("- largest blocks: " + ", ".join(f"{fmt(size)} ×{count}" for size, count in largest))
    if line.call_path:
        out += ["", "Call path into torch:", "", "```text", *(one_line(step).replace("`", "'") for step in line.call_path), "```"]
    return "\n".join(out)


def cell_of(stat: LineStat) -> tuple[str, int] | None:
    """(notebook file here, 0-based cell place) of a line recorded in a notebook cell that is here."""
    cell = stat.cell
    if cell is None or cell.notebook is None or cell.index is None:
        return None
    return cell.notebook, cell.index


def line_annotations(analysis: Analysis, cells: bool = False) -> dict:
    """Every user line that exists here, one annotation per line, grouped by local file; with ``cells``,
    the lines of notebook cells instead, grouped by (notebook file, cell place)."""
    moment = analysis.accounting.moment
    by_file: dict = {}
    for stat in analysis.lines:
        where = cell_of(stat) if cells else stat.local_path
        if where is None or not stat.line or (stat.live_bytes <= 0 and stat.allocated_bytes <= 0):
            continue
        lines = by_file.setdefault(where, {})
        if stat.line in lines:  # one file recorded under two paths: the first (larger) one wins
            continue
        lines[stat.line] = LineAnnotation(
            local_path=stat.local_path or where[0], line=stat.line, source=stat.source, text=hint_text(stat, moment),
            share=stat.share, live_bytes=stat.live_bytes, growing=stat.growing, growth_bytes=stat.growth_bytes,
            hover=hover_markdown(stat, moment), function=stat.function,
        )
    return {path: sorted(lines.values(), key=lambda a: a.line) for path, lines in by_file.items()}


def spread_markdown(live_by_rank: dict[int, int]) -> str:
    """A hover's line on a torchrun launch: this line's live bytes on every rank, lowest and highest."""
    per_rank = " · ".join(f"rank {rank}: {fmt(live)}" for rank, live in sorted(live_by_rank.items()))
    low = min(live_by_rank, key=lambda rank: (live_by_rank[rank], rank))
    high = max(live_by_rank, key=lambda rank: (live_by_rank[rank], -rank))
    return (f"**Across ranks**: {per_rank}  \n"
            f"min {fmt(live_by_rank[low])} (rank {low}) · max {fmt(live_by_rank[high])} (rank {high}) · "
            f"spread {fmt(live_by_rank[high] - live_by_rank[low])}")
