"""A loaded capture in the editor: inlay hints, hovers, the peak function's code lens, the OOM
diagnostic, measured growth on lint findings, and `vramlens/lineAnnotations`, each on the line
where the recorded line is now (placements.py)."""

from __future__ import annotations

import json
from typing import Callable
from urllib.parse import quote

import attrs
from lsprotocol import types
from pygls.workspace import TextDocument

from vramlens.lsp.annotations import LineAnnotation
from vramlens.lsp.capture_store import FileFigures
from vramlens.lsp.code_action_kit import asks_for
from vramlens.lsp.commands import command_guard, given, parse, result
from vramlens.lsp.feature import Feature, handler
from vramlens.lsp.params import uri_param
from vramlens.lsp.placements import Placements
from vramlens.lsp.runtime_findings import enclosing_loop, measured_growth
from vramlens.lsp.server import VramLensServer
from vramlens.lsp.stacks import whole_paths
from vramlens.lsp.storing_fix import storing_fix_actions

SOURCE = "vramlens"
OOM_CODE = "VL-OOM"
LINE_ANNOTATIONS = "vramlens/lineAnnotations"


def _line_range(document: TextDocument, line: int) -> types.Range:
    text = document.lines[line].rstrip("\r\n") if line < len(document.lines) else ""
    end = document.position_codec.client_num_units(text)
    return types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=end))


# Commands a hover may run (the VS Code client trusts exactly these in hovers): two of the client's, and
# the server's own that unfolds torch's frames in every hover's call path, or folds them again.
SHOW_REPORT_COMMAND = "vramlens.showMemoryReport"
CONFIRM_COMMAND = "vramlens.runConfirmation"
TORCH_FRAMES_COMMAND = "vramlens.showTorchFrames"


def command_link(title: str, command: str, argument: dict) -> str:
    return f"[{title}](command:{command}?{quote(json.dumps([argument]))})"


def command_links(folder: str | None, confirmable: bool) -> str:
    """The hover's last line: the report, and the experiment that confirms the cause (a run's capture only)."""
    argument = {"workspaceFolder": folder}
    links = [command_link("Show in report", SHOW_REPORT_COMMAND, argument)]
    if confirmable:
        links.append(command_link("Confirm the diagnosis", CONFIRM_COMMAND, argument))
    return " · ".join(links)


class WholePaths:
    """Whether hovers show torch's own frames, and the whole call paths of the shown capture's lines
    (worked out once per capture shown, the first time they are asked for)."""

    def __init__(self, server: VramLensServer):
        self.server = server
        self.shown = False
        self._paths: dict[int, tuple[object, dict[tuple[str, int], str]]] = {}  # id(rank view) -> (it, its paths)

    def forget(self) -> None:
        self._paths.clear()

    def of(self, figures: FileFigures) -> Callable[[LineAnnotation], tuple[str, str]]:
        """For each line of ``figures``: (its whole path when shown, the link that shows or folds it), for
        a line whose path has torch frames; ("", "") for the others."""
        loaded = next((loaded for loaded in self.server.captures.all() if loaded.view is not None
                       and any(shown is figures for shown in loaded.view.files.values())), None)
        if loaded is None:
            return lambda annotation: ("", "")
        view = loaded.view
        if id(view) not in self._paths:
            self._paths[id(view)] = (view, whole_paths(view.analysis))  # the view is kept: its id stays its own
        paths = self._paths[id(view)][1]
        argument = {"show": not self.shown}
        link = command_link("Fold torch frames" if self.shown else "Show torch frames", TORCH_FRAMES_COMMAND, argument)

        def more(annotation: LineAnnotation) -> tuple[str, str]:
            whole = paths.get((annotation.local_path, annotation.line))
            if whole is None:
                return "", ""
            return (whole if self.shown else ""), link

        return more


@attrs.frozen
class TorchFramesArguments:
    """Hovers of every folder show torch's frames, or fold them (one choice for the whole editor)."""

    show: bool = given("Give `show` as true or false.", default=True)


class CaptureFeature(Feature):
    """The loaded capture's figures in the editor: hints, hovers, the code lens, line annotations, the
    OOM diagnostic, the measured growth added to lint's retained-graph findings, and the storing line's quick fix."""

    code_action_kinds = (types.CodeActionKind.QuickFix.value,)

    def __init__(self) -> None:
        self.server: VramLensServer | None = None
        self.placements: Placements | None = None
        self.paths: WholePaths | None = None

    def register(self, server: VramLensServer) -> None:
        self.server = server
        self.placements = Placements(server)
        self.paths = WholePaths(server)
        server.command(TORCH_FRAMES_COMMAND)(command_guard(self.show_torch_frames))
        server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))(
            handler(self.inlay_hints))
        server.feature(types.TEXT_DOCUMENT_HOVER)(handler(self.hover))
        server.feature(types.TEXT_DOCUMENT_CODE_LENS)(handler(self.code_lens))
        server.feature(LINE_ANNOTATIONS)(handler(self.line_annotations))

    # -- hooks ------------------------------------------------------------------------------------
    def opened(self, document: TextDocument) -> None:
        self.placements.opened(document)

    def changed(self, document: TextDocument, params: types.DidChangeTextDocumentParams) -> None:
        self.placements.changed(document, params)

    def closed(self, uri: str) -> None:
        self.placements.closed(uri)

    def captures_changed(self) -> None:
        self.placements.reset()
        self.paths.forget()

    def diagnostics(self, document: TextDocument) -> list[types.Diagnostic]:
        """The OOM's line, where it is now (a changed line carries no runtime diagnostic)."""
        placement = self.placements.of(document)
        oom = placement.figures.oom if placement else None
        anchor = placement.anchors().get(oom.line) if oom else None
        if anchor is None or anchor.stale:
            return []
        return [types.Diagnostic(range=_line_range(document, anchor.current), message=oom.message,
                                 severity=types.DiagnosticSeverity.Error, code=OOM_CODE, source=SOURCE)]

    def amend_diagnostics(self, document: TextDocument, diagnostics: list[types.Diagnostic]) -> list[types.Diagnostic]:
        """A retained-graph finding on (or in the loop of) a line measured to grow says what was measured."""
        findings = [d for d in diagnostics if isinstance(d.data, dict) and d.data.get("rule") == "retained-graph"]
        placement = self.placements.of(document) if findings else None
        if placement is None:
            return diagnostics
        measured = placement.figures.growing()
        growing = {anchor.current + 1: measured[recorded] for recorded, anchor in placement.anchors().items()
                   if not anchor.stale and recorded in measured}
        if not growing:
            return diagnostics
        source = document.source
        for diagnostic in findings:
            line = diagnostic.range.start.line + 1
            sentence = measured_growth(line, enclosing_loop(source, line), growing)
            if sentence:
                diagnostic.message = f"{diagnostic.message} {sentence}"
        return diagnostics

    def code_actions(self, document: TextDocument, params: types.CodeActionParams) -> list[types.CodeAction]:
        """On the line that keeps the memory: the edit the census chose, where the file proves it safe."""
        placement = self.placements.of(document) if asks_for(params.context.only, types.CodeActionKind.QuickFix.value) else None
        edit = placement.figures.store_edit if placement else None
        if edit is None:
            return []
        return storing_fix_actions(document, placement.figures, placement.anchors().get(edit.line), params.range)

    # -- requests ---------------------------------------------------------------------------------
    def records_of(self, uri: str) -> tuple[TextDocument, list[dict], dict[int, dict]]:
        """The document, its records, and each line's record (none without figures for it)."""
        document = self.server.workspace.get_text_document(uri)
        placement = self.placements.of(document)
        if placement is None:
            return document, [], {}
        return document, *placement.records(document.version, self.links_for(document), self.paths)

    def links_for(self, document: TextDocument) -> str:
        folder, _ = self.server.folder_of(document.uri)
        loaded = self.server.captures.get(folder) or self.server.captures.get(None)
        confirmable = bool(loaded and loaded.view and loaded.view.meta.get("script"))
        return command_links(folder, confirmable)

    def inlay_hints(self, ls: VramLensServer, params: types.InlayHintParams) -> list[types.InlayHint]:
        if ls.settings_for(params.text_document.uri).annotation_style != "inlayHints":
            return []
        document, records, _ = self.records_of(params.text_document.uri)
        first, last = params.range.start.line, params.range.end.line
        return [types.InlayHint(
                    position=_line_range(document, record["line"]).end, label=record["text"], padding_left=True,
                    tooltip=types.MarkupContent(kind=types.MarkupKind.Markdown, value=record["hover"]))
                for record in records if first <= record["line"] <= last]

    def hover(self, ls: VramLensServer, params: types.HoverParams) -> types.Hover | None:
        document, _, by_line = self.records_of(params.text_document.uri)
        record = by_line.get(params.position.line)
        if record is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=record["hover"]),
                           range=_line_range(document, record["line"]))

    def code_lens(self, ls: VramLensServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        document = ls.workspace.get_text_document(params.text_document.uri)
        placement = self.placements.of(document)
        lens = placement.figures.lens if placement else None
        anchor = placement.anchors().get(lens.def_line) if lens else None
        if anchor is None or anchor.stale:
            return []
        folder, _ = ls.folder_of(document.uri)
        command = types.Command(title=lens.title, command="vramlens.showReport", arguments=[{"workspaceFolder": folder}])
        return [types.CodeLens(range=_line_range(document, anchor.current), command=command)]

    async def show_torch_frames(self, ls: VramLensServer, *arguments) -> dict:
        """Every hover's call path with torch's own frames, or folded again (``show: false``)."""
        self.paths.shown = parse(arguments, TorchFramesArguments).show
        ls.annotations_changed()
        return result(True, "Hovers show the whole call path, torch's frames included." if self.paths.shown
                      else "Hovers fold torch's frames again.")

    def line_annotations(self, ls: VramLensServer, params) -> dict:
        _, records, _ = self.records_of(uri_param(params, LINE_ANNOTATIONS))
        return {"annotations": records}
