"""One attributed line as people read it, whoever draws it: the CLI's Top lines, the hover, the report
view's tables. Plain strings (no Markdown, no terminal codes): each renderer only adds its own markup,
so a line's figure is the same words and the same number everywhere."""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.analysis.load.ending import moment_short
from vramlens.analysis.load.sources import place_of
from vramlens.analysis.model import Analysis, Holder, LineStat
from vramlens.units import count_of
from vramlens.units import format_bytes as fmt

GROWING_MARK = "↑"
SHOWN_SIZES = 3
MIN_HELD_SHARE = 10  # a holder is named for a line when it keeps at least a tenth of the line's live bytes


@dataclass(frozen=True)
class LineView:
    place: str  # "train.py:42", "train.ipynb cell 4 line 7"
    function: str
    live: bool  # False: the line only churned (it allocated, nothing of it is live at the moment)
    figure: str  # "2.84 GiB · 92% ↑"; a churn-only line: "none live · 1.46 GiB allocated"
    figure_words: str  # "2.84 GiB live · 92% at the OOM · growing"
    headline: str  # "2.84 GiB live at the OOM · 92% of live memory · growing, +250.00 MiB across steps"
    blocks: str  # "23 blocks live: 125.00 MiB ×23, … · 1213 allocations, 5.62 GiB over the run"
    held_by: str | None  # "held by model.val_outputs (a list of 23, 2.82 GiB), stored at keep.py:38"
    path: tuple[str, ...]  # frames of the stack holding most of the live bytes, the line's own first
    path_title: str  # what ``path`` is: "largest live stack" or "first allocation"


def figure(line: LineStat) -> str:
    if line.live_bytes == 0:
        return f"none live · {fmt(line.allocated_bytes)} allocated"
    text = f"{fmt(line.live_bytes)} · {line.share:.0%}"
    return f"{text} {GROWING_MARK}" if line.growing else text


def figure_words(line: LineStat, moment: str) -> str:
    if line.live_bytes == 0:
        return f"{fmt(line.allocated_bytes)} allocated, none live"
    parts = [f"{fmt(line.live_bytes)} live", f"{line.share:.0%} {moment_short(moment)}"]
    if line.growing:
        parts.append("growing")
    return " · ".join(parts)


def headline(line: LineStat, moment: str) -> str:
    if line.live_bytes == 0:
        return f"{fmt(line.allocated_bytes)} allocated here, none of it live {moment_short(moment)}"
    text = f"{fmt(line.live_bytes)} live {moment_short(moment)} · {line.share:.0%} of live memory"
    if line.growing:
        text += f" · growing, +{fmt(line.growth_bytes)} across steps"
    return text


def sizes_text(sizes: list[tuple[int, int]]) -> str:
    shown = ", ".join(f"{fmt(size)} ×{count}" for size, count in sizes[:SHOWN_SIZES])
    rest = sum(count for _, count in sizes[SHOWN_SIZES:])
    return shown + (f" and {rest} more" if rest else "")


def blocks_text(line: LineStat) -> str:
    """The live blocks when they are known (the bytes the figure counts), then the run's totals."""
    over_run = f"{count_of(line.count, 'allocation')}, {fmt(line.allocated_bytes)} over the run"
    if line.live_sizes:
        live = sum(count for _, count in line.live_sizes)
        return f"{count_of(live, 'block')} live: {sizes_text(line.live_sizes)} · {over_run}"
    if line.live_bytes and line.live_blocks:
        return f"{count_of(line.live_blocks, 'block')} live · {over_run}"
    return over_run


def holder_of(line: LineStat, holders: list[Holder]) -> Holder | None:
    """The largest holder the census filled from this line (None: no census, or nothing it names)."""
    if line.path is None:
        return None
    own = (line.path, line.line)
    return next((holder for holder in holders if (holder.appended_at == own or holder.created_at == own)
                 and (holder.bytes + holder.graph_bytes) * MIN_HELD_SHARE >= line.live_bytes), None)


def holder_words(holder: Holder, place) -> str:
    """`model.val_outputs (a list of 23)`, then where the code stores into it when that is known.

    ``place(path, line)`` names a recorded line for people (a notebook's lines by their cell)."""
    text = f"{holder.root} ({holder.container_words}, {fmt(holder.bytes)})"
    if holder.graph_bytes:  # tensors kept with their autograd graphs keep what those graphs saved
        text += f", whose autograd graphs keep {fmt(holder.graph_bytes)} more"
    stored = getattr(holder, "stored_at", None)  # the storing statement, when the census was joined to the code
    if stored:
        text += f", stored at {place(*stored)}"
    return text


def holder_history(holder: Holder, place) -> list[str]:
    """What a holder's row says after its size, in order: whether it grew across steps (or is the step's own
    working set), where the code stores into it, where what it keeps was allocated. ``place(path, line)``
    names a recorded line (each renderer adds its own markup there)."""
    parts = []
    if holder.survivor_bytes:
        parts.append(f"grew {fmt(holder.survivor_bytes)} across steps")
    elif holder.working_set:
        parts.append("the step's working set")
    if holder.stored_at:
        parts.append(f"stored at {place(*holder.stored_at)}")
    if holder.appended_at:
        parts.append(f"allocated at {place(*holder.appended_at)}")
    return parts


def line_view(line: LineStat, moment: str, holders: list[Holder], place) -> LineView:
    holder = holder_of(line, holders)
    live_path = bool(line.live_call_path)
    return LineView(
        place=line.label, function=line.function, live=line.live_bytes > 0, figure=figure(line),
        figure_words=figure_words(line, moment), headline=headline(line, moment), blocks=blocks_text(line),
        held_by=f"held by {holder_words(holder, place)}" if holder is not None and line.live_bytes else None,
        path=tuple(line.live_call_path if live_path else line.call_path),
        path_title="largest live stack" if live_path else "first allocation",
    )


def recorded_place(analysis: Analysis, roots=None):
    """`place(path, line)` for a recorded line: `train.py:42`, a notebook's `train.ipynb cell 3 line 3`;
    with ``roots`` (the report's), a file under one of them is named relative to it."""
    facts = analysis.notebook
    return lambda path, line: place_of(str(path), line, facts, roots)


def line_views(analysis: Analysis) -> dict[int, LineView]:
    """id(line) -> its view, for every line of the analysis (the renderers look lines up by identity)."""
    place, moment = recorded_place(analysis), analysis.accounting.moment
    return {id(line): line_view(line, moment, analysis.holders, place) for line in analysis.lines}


def line_view_json(view: LineView) -> dict:
    """The view as the report view receives it: labels only, it formats nothing itself."""
    return {"place": view.place, "function": view.function, "live": view.live, "figure": view.figure,
            "figureWords": view.figure_words, "headline": view.headline, "blocks": view.blocks,
            "heldBy": view.held_by, "path": list(view.path), "pathTitle": view.path_title}
