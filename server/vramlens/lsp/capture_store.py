"""Loaded captures, one per workspace folder, and what each says about each local file.

A load may hold several processes' captures (one per torchrun rank): ``ranks`` lists their
analyses and ``selected`` says whose figures are shown (the failing rank by default). A load of
one process is a list of one; a load of an experiment whose runs are not on this machine is a
list of none (it has only its table). Pure (no pygls): the adapters ask ``figures_for(path)``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from vramlens.analysis import Analysis, analyze_capture
from vramlens.analysis.load.notebook import notebook_cells
from vramlens.analysis.ranks.model import RankComparison
from vramlens.analysis.accounting.segment_map import segment_map, segment_map_json
from vramlens.analysis.attribution.live_at import live_at, live_at_json
from vramlens.analysis.model import LineHistory
from vramlens.analysis.recommendations.store_edit import StoreEdit, store_edit
from vramlens.analysis.load.snapshot import device_segments, device_trace, pick_device
from vramlens.analysis.rendering.json_export import downsample
from vramlens.capture import load_capture
from vramlens.lsp.annotations import LineAnnotation, line_annotations, storing_lens
from vramlens.lsp.line_tracking import split_lines
from vramlens.lsp.runtime_findings import OomLine, PeakFunction, oom_line, peak_function
from vramlens.lint.parse.source import SOURCE_LIMIT
from vramlens.regular_files import FileProblem, read_text_file
from vramlens.lsp.source_mapping import choose_source_root, recorded_user_files


def same_file_key(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def cell_key(notebook: str, index: int) -> str:
    """The figures of one notebook cell are filed under its notebook and its place among the cells."""
    return f"{same_file_key(notebook)}#cell-{index}"


@dataclass
class FileFigures:
    """Everything a capture shows in one local file; lines are 1-based, as recorded."""

    local_path: str
    annotations: dict[int, LineAnnotation] = field(default_factory=dict)
    oom: OomLine | None = None
    lens: PeakFunction | None = None
    lines: list[str] = field(default_factory=list)  # the file's text when the capture was loaded
    store_edit: StoreEdit | None = None  # the storing line's quick fix, when the census says what its holder keeps
    measured_edits: frozenset[str] = frozenset()  # ...the stripped lines a confirming run measured to fit

    def recorded_texts(self) -> dict[int, str | None]:
        """0-based line -> the stripped text each figure was measured against."""
        return {line - 1: self.lines[line - 1].strip() if 0 < line <= len(self.lines) else None
                for line in self.recorded_lines()}

    def recorded_lines(self) -> list[int]:
        lines = set(self.annotations)
        if self.oom:
            lines.add(self.oom.line)
        if self.lens:
            lines.add(self.lens.def_line)
        if self.store_edit:
            lines.add(self.store_edit.line)
        return sorted(lines)

    def growing(self) -> dict[int, tuple[int, int]]:
        """Lines measured to grow: line -> (growth bytes, live bytes)."""
        return {line: (a.growth_bytes, a.live_bytes) for line, a in self.annotations.items() if a.growing}


@dataclass
class RankView:
    """One process's capture: its facts, its analysis and the figures it puts in each file."""

    rank: int | None
    meta: dict
    analysis: Analysis
    files: dict[str, FileFigures]  # same_file_key(local path) -> figures
    history: LineHistory | None = None  # the top line at each timeline point, each line's live bytes per step
    segments: dict | None = None  # the allocator's segments when the snapshot was taken (segment_map_json)

    @property
    def tops(self) -> list | None:
        """Per timeline point of the report: (label, bytes) of the top user line, or None."""
        return self.history.tops if self.history is not None else None

    @property
    def failed(self) -> bool:
        return self.analysis.outcome == "oom"


def file_figures(analysis: Analysis) -> dict[str, FileFigures]:
    files: dict[str, FileFigures] = {}

    def figures(path: str) -> FileFigures:
        return files.setdefault(same_file_key(path), FileFigures(path))

    for path, annotations in line_annotations(analysis).items():
        figures(path).annotations = {a.line: a for a in annotations}
    cells: dict[str, FileFigures] = {}
    for (notebook, index), annotations in line_annotations(analysis, cells=True).items():
        cells[cell_key(notebook, index)] = FileFigures(notebook, {a.line: a for a in annotations})
    oom = oom_line(analysis, cell_key)
    if oom and "#cell-" in oom.local_path:
        # The failing cell often holds nothing live (its request is what failed): it gets figures of its own.
        ref = analysis.notebook.ref(analysis.oom.site.path) if analysis.notebook and analysis.oom and analysis.oom.site else None
        if oom.local_path not in cells and ref is not None and ref.notebook:
            cells[oom.local_path] = FileFigures(ref.notebook)
        if oom.local_path in cells:
            cells[oom.local_path].oom = oom
    elif oom:
        figures(oom.local_path).oom = oom
    lens = storing_lens(analysis) or peak_function(analysis)  # the line that keeps the memory, else the peak's function
    if lens:
        figures(lens.local_path).lens = lens
    edit = store_edit(analysis.diagnosis.cause, analysis.storing, analysis.holders)
    storing = analysis.storing[0] if edit is not None else None
    if storing is not None and storing.local_path and storing.cell is None:  # a file here, not a notebook's cell
        figures(storing.local_path).store_edit = edit
        figures(storing.local_path).measured_edits = frozenset(
            rec.measured_edit for rec in analysis.recommendations if rec.measured_edit)
    for file in files.values():
        file.lines = read_lines(file.local_path)
    for key, file in cells.items():
        file.lines = cell_lines(file.local_path, int(key.rsplit("#cell-", 1)[1]))
    files.update(cells)
    return files


def cell_lines(notebook: str, index: int) -> list[str]:
    """The cell's text in the notebook file as it is now (what the editor opened), as lines."""
    for place, _id, source in notebook_cells(notebook) or []:
        if place == index:
            return split_lines(source)
    return []


def read_lines(path: str) -> list[str]:
    try:  # a regular file only, bounded: a FIFO or a device never blocks the server
        return split_lines(read_text_file(path, SOURCE_LIMIT, "source file"))
    except FileProblem:
        return []


@dataclass
class LoadedCapture:
    path: str  # the capture folder or pickle
    folder_uri: str  # the workspace folder it is mapped onto
    source_root: str  # the local folder recorded paths were mapped onto
    ranks: list[RankView]
    selected: int = 0
    experiment: dict | None = None  # `vramlens experiment --json` output, once interventions were compared
    comparison: RankComparison | None = None  # a torchrun launch: how its ranks compare

    @property
    def view(self) -> RankView | None:
        """The shown process's capture; None for an experiment without a capture here."""
        return self.ranks[self.selected] if self.ranks else None

    @classmethod
    def of_ranks(cls, path: str, folder_uri: str, source_root: str, ranks: list[RankView]) -> "LoadedCapture":
        """A load of one or more processes' captures, showing the first one that failed (else the first)."""
        failing = next((index for index, rank in enumerate(ranks) if rank.failed), 0)
        return cls(path, folder_uri, source_root, ranks, failing)

    def shown_capture_path(self) -> str | None:
        """The capture folder (or pickle) of the process shown: the load's own, or the shown rank's."""
        if self.comparison is None:
            return self.path
        shown = self.view.rank if self.view else None
        return next((summary.capture for summary in self.comparison.ranks if summary.rank == shown), None)

    def select_rank(self, rank: int) -> bool:
        """Show this rank's figures; False when the load has no such rank."""
        index = next((i for i, view in enumerate(self.ranks) if view.rank == rank), None)
        if index is None:
            return False
        self.selected = index
        return True


def analyze_for_folder(path: str, folder_path: str, total_memory: int | None = None, rank: int | None = None) -> tuple[RankView, str]:
    """Load and analyse one capture, mapping its recorded paths into ``folder_path``."""
    capture = load_capture(path)
    root = choose_source_root(folder_path, recorded_user_files(capture))
    analysis = analyze_capture(capture, total_memory=total_memory, source_root=root, history=True)
    return RankView(rank, capture.meta, analysis, file_figures(analysis), timeline_history(analysis),
                    segments_view(capture, analysis)), root


def segments_view(capture, analysis: Analysis) -> dict | None:
    """The segment map, titled by the moment the snapshot holds."""
    segments = device_segments(capture.snapshot, pick_device(capture.snapshot, capture.meta))
    found = segment_map(segments, analysis.accounting.request)
    if found is None:
        return None
    moment = capture.meta.get("snapshot_moment")
    title = {"oom": "Segments at the OOM", "end": "Segments at the end"}.get(moment, "Segments when the snapshot was taken")
    return {"title": title, **segment_map_json(found)}


def timeline_history(analysis: Analysis) -> LineHistory:
    """The top user line at each point the report's timeline draws (its hover names it), and each line's
    live bytes at the end of every step (the per-line table's sparkline): the analysis' history, which
    has a top line for every timeline point, kept for the points the report draws."""
    history, points = analysis.history, analysis.timeline.points
    top_at = dict(zip((point.index for point in points), history.tops))
    return LineHistory([top_at[point.index] for point in downsample(points)], history.at_steps, history.peaks)


def live_at_index(loaded: LoadedCapture, index: int) -> dict | None:
    """What was live at trace position ``index`` of the shown capture, read again from its file (the
    analysis keeps no trace: a click on the timeline costs one load, not the memory of every load)."""
    path = loaded.shown_capture_path()
    if path is None:
        return None
    capture = load_capture(path)
    trace = device_trace(capture.snapshot, pick_device(capture.snapshot, capture.meta))
    return live_at_json(live_at(trace, index)) if trace else None


def analysed(path: str, source_root: str | None) -> tuple[Analysis, dict]:
    """One capture's analysis and recorded facts, its paths mapped onto ``source_root`` (the folder of the
    loaded capture it is compared with), without loading it for a folder."""
    capture = load_capture(path)
    return analyze_capture(capture, source_root=source_root), capture.meta


def load(path: str, folder_uri: str, folder_path: str, total_memory: int | None = None) -> LoadedCapture:
    view, root = analyze_for_folder(path, folder_path, total_memory)
    return LoadedCapture.of_ranks(str(Path(path).resolve()), folder_uri, root, [view])


class CaptureStore:
    def __init__(self) -> None:
        self._by_folder: dict[str, LoadedCapture] = {}

    def put(self, loaded: LoadedCapture) -> None:
        self._by_folder[loaded.folder_uri] = loaded

    def get(self, folder_uri: str | None) -> LoadedCapture | None:
        if folder_uri is None:
            return next(iter(self._by_folder.values()), None)
        return self._by_folder.get(folder_uri)

    def clear(self, folder_uri: str | None = None) -> list[LoadedCapture]:
        if folder_uri is None:
            cleared = list(self._by_folder.values())
            self._by_folder.clear()
            return cleared
        removed = self._by_folder.pop(folder_uri, None)
        return [removed] if removed else []

    def all(self) -> list[LoadedCapture]:
        return list(self._by_folder.values())

    def figures_for(self, path: str | None, cell: int | None = None) -> FileFigures | None:
        """The figures the loaded captures hold for this local file, or for cell ``cell`` of this
        notebook (the first folder that has any)."""
        if not path:
            return None
        key = same_file_key(path) if cell is None else cell_key(path, cell)
        for loaded in self._by_folder.values():
            figures = loaded.view.files.get(key) if loaded.view else None
            if figures is not None:
                return figures
        return None
