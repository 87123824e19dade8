"""Per-line figures from an analysis: the hint text and the hover Markdown for each attributed line.

Pure (no pygls): the LSP adapters only place these on the document's current lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from vramlens.safe_text import one_line
from vramlens.analysis.model import Analysis, LineStat, StoringLine
from vramlens.lsp.runtime_findings import PeakFunction
from vramlens.lsp.frame_links import FrameLinker, is_torch_frame, line_uri, split_frame
from vramlens.analysis.rendering.line_view import LineView, figure, figure_words, line_views, recorded_place
from vramlens.analysis.rendering.storing_view import kept_figure, live_total, storing_view
from vramlens.units import format_bytes as fmt

STALE_TEXT = "stale · changed since the capture"


@dataclass(frozen=True)
class LineAnnotation:
    """One attributed line of one file, as recorded (``line`` is 1-based, in the file the run executed)."""

    local_path: str
    line: int
    source: str | None  # the line's text when the capture was loaded, to tell when it changes
    text: str  # the short figure shown after the line
    long_text: str  # the figure in words, for a tooltip
    share: float
    live_bytes: int
    growing: bool
    growth_bytes: int
    hover: str
    function: str


def hint_text(line: LineStat, moment: str) -> str:
    """The short figure after a line, `2.63 GiB · 89% ↑`; the words are in its tooltip (the hover)."""
    return figure(line)


def long_text(line: LineStat, moment: str) -> str:
    """The same figure in words: `2.63 GiB live · 89% at the OOM · growing`."""
    return figure_words(line, moment)


def call_path_markdown(call_path: list[str], link: Callable[[str], str | None], own_label: str | None = None) -> str:
    """`train.py:20 evaluate › +4 torch frames › linear.py:134 forward`: frames as links, torch's folded.

    A run of torch's own frames is folded into a count; the innermost frame, the one that
    allocated, stays named.
    """
    parts: list[str] = []
    index = 0
    while index < len(call_path):
        end = index
        while end < len(call_path) and is_torch_frame(split_frame(call_path[end])[0]):
            end += 1
        if end == index:  # a user or library frame; the line's own frame by its label (`train.ipynb cell 4 line 7`)
            parts.append(_frame_markdown(call_path[index], link, own_label if index == 0 else None))
            index += 1
            continue
        folded = end - index - (1 if end == len(call_path) else 0)
        if folded:
            parts.append(f"+{folded} torch frame{'' if folded == 1 else 's'}")
        if end == len(call_path):
            parts.append(_frame_markdown(call_path[-1], link))
        index = end
    return " › ".join(parts)


def _code(text: str) -> str:
    """A name from the capture inside `code`: one line, no backtick to close it early."""
    return one_line(text).replace("`", "'")


def _frame_markdown(frame: str, link: Callable[[str], str | None], label: str | None = None) -> str:
    path, line, function = split_frame(frame)
    function = _code(function) if function else function
    where = _code(label or (f"{path.rsplit('/', 1)[-1]}:{line}" if line else path))
    uri = link(frame)
    shown = f"[{_escape(where)}]({uri})" if uri else f"`{where}`"
    return f"{shown} `{function}`" if function else shown


def _escape(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]").replace("_", "\\_")


def hover_markdown(view: LineView, link: Callable[[str], str | None] = lambda frame: None) -> str:
    """The view's headline, its live blocks and holder, then the path of the stack holding most of the
    live bytes, torch's own frames folded."""
    out = [f"**{_code(view.headline)}**  ", _code(view.blocks)]
    if view.held_by:
        out += ["", _escape(one_line(view.held_by[:1].upper() + view.held_by[1:]))]
    if view.path:
        out += ["", f"{call_path_markdown(list(view.path), link, view.place)}  ", f"*{view.path_title}*"]
    elif view.function and view.place != view.function:  # no frames kept: still say where
        out += ["", f"`{_code(view.place)}` `{_code(view.function)}`"]
    return "\n".join(out)


def cell_of(stat: LineStat) -> tuple[str, int] | None:
    """(notebook file here, 0-based cell place) of a line recorded in a notebook cell that is here."""
    cell = stat.cell
    if cell is None or cell.notebook is None or cell.index is None:
        return None
    return cell.notebook, cell.index


def line_annotations(analysis: Analysis, cells: bool = False, linker: FrameLinker | None = None) -> dict:
    """Every user line that exists here, one annotation per line, grouped by local file; with ``cells``,
    the lines of notebook cells instead, grouped by (notebook file, cell place)."""
    moment = analysis.accounting.moment
    linker = linker or FrameLinker(analysis.local_root, analysis.environment.get("torch"))
    views = line_views(analysis)
    by_file: dict = {}
    shade = _shade(analysis)
    for stat in analysis.lines:
        where = cell_of(stat) if cells else stat.local_path
        if where is None or not stat.line or (stat.live_bytes <= 0 and stat.allocated_bytes <= 0):
            continue
        lines = by_file.setdefault(where, {})
        if stat.line in lines:  # one file recorded under two paths: the first (larger) one wins
            continue
        lines[stat.line] = LineAnnotation(
            local_path=stat.local_path or where[0], line=stat.line, source=stat.source, text=hint_text(stat, moment),
            long_text=long_text(stat, moment), share=shade(stat), live_bytes=stat.live_bytes, growing=stat.growing,
            growth_bytes=stat.growth_bytes, hover=hover_markdown(views[id(stat)], _user_first(stat, linker)),
            function=stat.function,
        )
    _mark_storing(analysis, by_file, cells, linker)
    return {path: sorted(lines.values(), key=lambda a: a.line) for path, lines in by_file.items()}


def _shade(analysis: Analysis) -> Callable[[LineStat], float]:
    """How dark a line is shaded: its share of the live memory; when what ran out is growth across steps
    (retention), its share of what grew, so the step's own tensors (its working set) do not outshine the
    lines that keep each step's tensors. The figure's text keeps the live share either way."""
    grown = analysis.diagnosis.cause == "retained_references" and any(line.growing for line in analysis.lines)
    total = max(analysis.accounting.allocated or sum(line.live_bytes for line in analysis.lines), 1)
    if not grown:
        return lambda stat: stat.share
    return lambda stat: min(stat.growth_bytes / total, 1.0)


def _storing_place(storing: StoringLine, cells: bool):
    if cells:
        cell = storing.cell
        return (cell.notebook, cell.index) if cell is not None and cell.notebook and cell.index is not None else None
    return storing.local_path


def _code_name(text: str) -> str:
    return f"`{_code(text)}`"


def _mark_storing(analysis: Analysis, by_file: dict, cells: bool, linker: FrameLinker) -> None:
    """The storing line carries the figure (and the shade); the line that allocated what it keeps
    says where it is kept, and its own shade keeps only what no storing line explains."""
    total = live_total(analysis)
    kept_from: dict = {}
    for storing in analysis.storing:
        where = _storing_place(storing, cells)
        if where is None:
            continue
        lines = by_file.setdefault(where, {})
        own = lines.get(storing.line)
        view = storing_view(storing, analysis, _linked_place(analysis))
        hover = storing_hover(storing, analysis, linker)
        if own is not None:
            hover += "\n\n" + own.hover
        lines[storing.line] = LineAnnotation(
            local_path=storing.local_path or where[0], line=storing.line, source=storing.source, text=view.figure,
            long_text=view.words, share=view.share, live_bytes=view.kept, growing=bool(storing.growth_bytes),
            growth_bytes=storing.growth_bytes, hover=hover, function=own.function if own else "")
        for place, size in storing.kept_from.items():
            if place != (storing.path, storing.line):
                kept_from.setdefault(place, []).append((storing, size))
    for stat in analysis.lines:
        keepers = kept_from.get((stat.path, stat.line))
        where = cell_of(stat) if cells else stat.local_path
        annotation = by_file.get(where, {}).get(stat.line) if where is not None else None
        if not keepers or annotation is None:
            continue
        kept = sum(size for _storing, size in keepers)
        first = keepers[0][0]
        grown = analysis.diagnosis.cause == "retained_references" and any(line.growing for line in analysis.lines)
        left = max(stat.growth_bytes - kept, 0) if grown else max(stat.live_bytes - kept, 0)  # what no keeper explains
        note = storing_view(first, analysis, _linked_place(analysis), name=_code_name).kept_by
        by_file[where][stat.line] = LineAnnotation(
            local_path=annotation.local_path, line=annotation.line, source=annotation.source,
            text=kept_figure(stat.live_bytes, kept, one_line(first.target)),
            long_text=f"{annotation.long_text} · {note}",
            share=left / total, live_bytes=annotation.live_bytes, growing=False,
            growth_bytes=annotation.growth_bytes, hover=f"**{note[:1].upper()}{note[1:]}**  \n{annotation.hover}",
            function=annotation.function)


def _linked_place(analysis: Analysis):
    """`place(path, line)` for a hover: the recorded line as a link to its file here, else as code."""
    named = recorded_place(analysis)  # a notebook's cell by its place, not its temp file

    def place(path: str, line: int) -> str:
        local = next((stat.local_path for stat in analysis.lines if stat.path == path and stat.local_path), None)
        label = _code(named(path, line))
        return f"[{_escape(label)}]({line_uri(local, line)})" if local else f"`{label}`"
    return place


def storing_hover(storing: StoringLine, analysis: Analysis, linker: FrameLinker) -> str:
    """The storing line's hover: what it keeps, in which holder, where that was allocated, what to change."""
    view = storing_view(storing, analysis, _linked_place(analysis), name=_code_name)
    out = [f"**{view.words[:1].upper()}{view.words[1:]}** — the line to change  "]
    if view.second_hop:
        out.append(f"{view.second_hop[:1].upper()}{view.second_hop[1:]}.")
    if storing.others:
        out.append("It is also stored into at line" + ("s " if len(storing.others) > 1 else " ")
                   + ", ".join(str(number) for number in storing.others[:5]) + ".")
    advice = next((rec for rec in analysis.recommendations
                   if any(a.kind == "open_line" and a.arguments.get("line") == storing.line
                          and a.arguments.get("path") == storing.path for a in rec.actions)), None)
    if advice is not None:
        out += ["", f"What to try: {_code(advice.action)}"]
    return "\n".join(out)


def storing_lens(analysis: Analysis) -> PeakFunction | None:
    """The code lens on the line that keeps the memory, when one was found in a file here; else on the
    line of the user's code a library remedy changes (`TrainingArguments(`, `torch.load(`)."""
    storing = next((s for s in analysis.storing if s.local_path), None)
    if storing is None:
        return _remedy_lens(analysis)
    words = storing_view(storing, analysis, lambda path, line: f"{path}:{line}", name=one_line).words
    title = f"▲ {words} — the line to change · show memory report"
    return PeakFunction(storing.local_path, storing.line, title)


def _user_first(stat: LineStat, linker: FrameLinker) -> Callable[[str], str | None]:
    """Links for a line's call path: its own frame is the line itself (its local file is known)."""
    own = stat.call_path[0] if stat.call_path else None

    def link(frame: str) -> str | None:
        if frame == own and stat.local_path:
            return line_uri(stat.local_path, stat.line)
        return linker.uri(frame)

    return link


def spread_markdown(live_by_rank: dict[int, int]) -> str:
    """A hover's line on a torchrun launch: this line's live bytes on every rank, lowest and highest."""
    per_rank = " · ".join(f"rank {rank}: {fmt(live)}" for rank, live in sorted(live_by_rank.items()))
    low = min(live_by_rank, key=lambda rank: (live_by_rank[rank], rank))
    high = max(live_by_rank, key=lambda rank: (live_by_rank[rank], -rank))
    return (f"**Across ranks**: {per_rank}  \n"
            f"min {fmt(live_by_rank[low])} (rank {low}) · max {fmt(live_by_rank[high])} (rank {high}) · "
            f"spread {fmt(live_by_rank[high] - live_by_rank[low])}")


def _remedy_lens(analysis: Analysis) -> PeakFunction | None:
    local = {line.path: line.local_path for line in analysis.lines if line.path and line.local_path}
    for rec in analysis.recommendations:
        if rec.remedy is None:
            continue
        place = next((a.arguments for a in rec.actions if a.kind == "open_line" and local.get(a.arguments.get("path"))), None)
        if place is not None:
            library = rec.action.split(":", 1)[0]
            return PeakFunction(local[place["path"]], place["line"],
                                f"▲ the line to change for {one_line(library)} — show memory report")
    return None
