"""Where a loaded capture's recorded lines are in each open document now, and the records
(`vramlens/lineAnnotations` entries, each hover's Markdown) placed on them.

Every figure goes through the document's line tracker first: it is shown on the line it was
measured on, wherever edits moved that line, and never on a line whose text changed. The records
are worked out once per version of a document: every hover, hint and decoration of it reads them.
"""

from __future__ import annotations

from typing import Callable, Protocol

from lsprotocol import types
from pygls.workspace import TextDocument

from vramlens.lsp.annotations import STALE_TEXT, LineAnnotation
from vramlens.lsp.capture_store import FileFigures
from vramlens.lsp.line_tracking import Anchor, LineTracker, split_lines
from vramlens.lsp.server import VramLensServer

STALE_HOVER = "**VRAM Lens** — this line changed since the capture: its figures no longer apply. Run the diagnosis again."
More = Callable[[LineAnnotation], tuple[str, str]]  # a line's own (section, link) to add to its hover


class Additions(Protocol):
    """What a hover adds to the capture's words (capture_features.WholePaths): ``shown`` is part of what the
    records depend on, ``of(figures)`` gives each line's additions."""

    shown: bool

    def of(self, figures: FileFigures) -> More: ...


class Placement:
    """Where each recorded line of one file is in the open document's current text."""

    def __init__(self, figures: FileFigures, document: TextDocument):
        self.figures = figures
        current = split_lines(document.source)
        # Matched against the file as it was when the capture was loaded, edits since included.
        self.tracker = LineTracker(figures.recorded_texts(), figures.lines or current, current)
        self._records: tuple[tuple, list[dict], dict[int, dict]] | None = None  # (version, links), records, by line

    def anchors(self) -> dict[int, Anchor]:
        """Recorded 1-based line -> its anchor, for lines still in the document."""
        return {anchor.recorded + 1: anchor for anchor in self.tracker.positions()}

    def records(self, version: int | None, links: str, paths: Additions) -> tuple[list[dict], dict[int, dict]]:
        """The file's `vramlens/lineAnnotations` records, and each current 0-based line's first one, worked
        out once per version of the document: every hover, hint and decoration of that version reads them."""
        key = (version, links, paths.shown)
        if self._records is None or self._records[0] != key:
            records = annotation_records(self, links, paths.of(self.figures))
            by_line: dict[int, dict] = {}
            for record in records:
                by_line.setdefault(record["line"], record)
            self._records = (key, records, by_line)
        return self._records[1], self._records[2]

    def moved(self) -> None:
        """An edit reached the tracker: the records of the last version are stale."""
        self._records = None


class Placements:
    """Line trackers of open documents that a loaded capture has figures for (the figures of the
    folder's capture, placed on each open document's current lines)."""

    def __init__(self, server: VramLensServer):
        self.server = server
        self._by_uri: dict[str, Placement] = {}

    def reset(self) -> None:
        self._by_uri.clear()

    def of(self, document: TextDocument) -> Placement | None:
        cell = self.server.cell_place(document.uri)  # a notebook's cell (its path is the notebook's file)
        figures = (self.server.captures.figures_for(*cell) if cell is not None
                   else self.server.captures.figures_for(document.path))
        if figures is None:
            self._by_uri.pop(document.uri, None)
            return None
        placement = self._by_uri.get(document.uri)
        if placement is None or placement.figures is not figures:
            placement = self._by_uri[document.uri] = Placement(figures, document)
        return placement

    # DocumentListener
    def opened(self, document: TextDocument) -> None:
        self._by_uri.pop(document.uri, None)  # reopened from disk: matched afresh

    def changed(self, document: TextDocument, params: types.DidChangeTextDocumentParams) -> None:
        placement = self._by_uri.get(document.uri)
        if placement is None:
            return
        tracker = placement.tracker
        before = _signature(tracker)
        codec = document.position_codec
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                lines = [line + "\n" for line in tracker.lines]
                start = codec.position_from_client_units(lines, change.range.start)
                end = codec.position_from_client_units(lines, change.range.end)
                tracker.apply_change((start.line, start.character), (end.line, end.character), change.text)
            else:
                tracker.replace_all(split_lines(change.text))
        placement.moved()
        if _signature(tracker) != before:  # typing that moves or changes no annotated line asks nothing of the client
            self.server.annotations_changed()

    def closed(self, uri: str) -> None:
        self._by_uri.pop(uri, None)


def _signature(tracker: LineTracker) -> list[tuple[int, int, bool]]:
    return [(anchor.recorded, anchor.current, anchor.stale) for anchor in tracker.positions()]


def annotation_records(placement: Placement, links: str = "",
                       more: More | None = None) -> list[dict]:
    """`vramlens/lineAnnotations` entries: each attributed line where it now is; ``links`` ends each hover,
    and ``more(annotation)`` gives a line's own (section, link) to add to it."""
    records = []
    for recorded, anchor in sorted(placement.anchors().items(), key=lambda item: item[1].current):
        annotation = placement.figures.annotations.get(recorded)
        if annotation is None:
            continue
        section, link = more(annotation) if more is not None else ("", "")
        hover = "\n\n".join(part for part in (annotation.hover, section, " · ".join(l for l in (links, link) if l)) if part)
        records.append({
            "line": anchor.current,
            "text": STALE_TEXT if anchor.stale else annotation.text,
            "longText": STALE_TEXT if anchor.stale else annotation.long_text,
            "share": 0.0 if anchor.stale else round(annotation.share, 4),
            "liveBytes": 0 if anchor.stale else annotation.live_bytes,
            "growing": False if anchor.stale else annotation.growing,
            "stale": anchor.stale,
            "hover": STALE_HOVER if anchor.stale else hover,
        })
    return records
