"""The language server: documents, settings and notebooks, with every event handed to the features.

The server knows no feature by name: the composition root (app.py) adds them. It answers the
document and lifecycle notifications itself (pygls allows one handler per method) and hands each
one to every feature's hook (feature.py). Diagnostics from all features are published together: at
once on open, save and settings changes, and after a short pause in typing for edits.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from dataclasses import asdict, dataclass
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from vramlens import __version__
from vramlens.analysis.load.notebook import notebook_cells
from vramlens.lsp.capture_store import CaptureStore
from vramlens.lsp.feature import Feature
from vramlens.lsp.protocol import VramLensProtocol
from vramlens.lsp.settings import Settings, parse_settings
from vramlens.safe_text import printable

SETTINGS_SECTION = "vramlens"  # workspace/didChangeConfiguration: {"vramlens": {...}}
# Edits arrive on every keystroke: diagnostics follow once typing pauses this long, for the latest text only.
CHANGE_DEBOUNCE_S = 0.2
ANNOTATIONS_CHANGED = "vramlens/annotationsChanged"
SHUTDOWN_WAIT_S = 40.0  # the runner gives a script 30 s to write its capture after SIGTERM
logger = logging.getLogger(__name__)


# Jupyter notebooks' Python cells arrive as notebook documents: the cells in order, each a text document.
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(notebook_selector=[types.NotebookDocumentFilterWithCells(
    notebook=types.NotebookDocumentFilterNotebookType(notebook_type="jupyter-notebook"),
    cells=[types.NotebookCellLanguage(language="python")])])


@dataclass(frozen=True)
class NotebookView:
    path: str  # the notebook's file (its URI when it has none)
    cells: tuple[tuple[str, str], ...]  # every code cell's (URI, text), in order
    rank_of: dict[str, int]  # a code cell's URI (unquoted) -> its rank among the code cells


class VramLensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("vramlens", __version__, protocol_cls=VramLensProtocol, notebook_document_sync=NOTEBOOK_SYNC)
        self.features: list[Feature] = []  # in the order app.py lists them
        self.folder_settings: dict[str, Settings] = {}  # workspace folder URI -> its `vramlens` section
        self.default_settings = Settings()  # from initializationOptions, for folders the client did not answer for
        self.cancellable_commands: dict[object, threading.Event] = {}  # request id -> set on $/cancelRequest
        self.running_commands: dict[object, asyncio.Task] = {}  # request id -> the command's task
        self.loading: dict[object, asyncio.Task] = {}  # request id -> the task awaiting a load worker
        self.captures = CaptureStore()  # the loaded capture of each workspace folder
        self.change_debounce_s = CHANGE_DEBOUNCE_S
        self._pending: dict[str, asyncio.TimerHandle] = {}  # uri -> diagnostics scheduled after an edit
        self._notebook_places: dict[str, tuple[int, list[int] | None]] = {}  # notebook path -> (mtime, code cells' places)
        self._notebook_views: dict[str, NotebookView] = {}  # notebook URI -> its code cells, until it changes
        self._published: dict[str, list[types.Diagnostic]] = {}  # uri -> the diagnostics sent last
        self._edited: dict[str, set[str]] = {}  # notebook URI -> its cells edited since diagnostics were sent
        self.code_action_kinds: list[str] = []  # what the features offer, announced at initialize
        _register_document_events(self)
        _register_notebook_events(self)

    def add(self, feature: Feature) -> None:
        """A feature answers its own requests from now on, and hears every hook."""
        feature.register(self)
        self.features.append(feature)
        self.code_action_kinds.extend(kind for kind in feature.code_action_kinds if kind not in self.code_action_kinds)

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        """Every feature's code actions for the range, in the order app.py lists the features."""
        document = self.workspace.get_text_document(params.text_document.uri)
        return [action for feature in self.features
                for action in self._guarded(feature.code_actions, document, params, fallback=[])]

    def tell(self, hook: str, *arguments) -> None:
        """Call one hook of every feature; one that fails is logged, and the others still hear it."""
        for feature in self.features:
            self._guarded(getattr(feature, hook), *arguments)

    def captures_changed(self) -> None:
        """A capture was loaded, replaced, cleared or shows another rank: figures move, diagnostics follow."""
        self.tell("captures_changed")
        self.annotations_changed()
        self.publish_all()

    # -- diagnostics ----------------------------------------------------------------------------
    def publish_diagnostics(self, uri: str, only_if_changed: bool = False) -> None:
        """Diagnostics for the document's current text, now (open, save, settings); drops a scheduled run.
        ``only_if_changed``: not sent when they are what was sent last (a notebook's other cells after an edit)."""
        self.cancel_scheduled(uri)
        document = self.workspace.get_text_document(uri)
        diagnostics = [d for feature in self.features for d in self._guarded(feature.diagnostics, document)]
        for feature in self.features:
            diagnostics = self._guarded(feature.amend_diagnostics, document, diagnostics, fallback=diagnostics)
        if only_if_changed and self._published.get(uri) == diagnostics:
            return
        self._published[uri] = diagnostics
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=document.version, diagnostics=diagnostics)
        )

    def schedule_notebook(self, notebook_uri: str, edited: set[str] = frozenset()) -> None:
        """After an edit of a notebook: once typing pauses, every cell's diagnostics are worked out in one
        pass (the notebook is linted once) and sent for the cells whose diagnostics changed."""
        for uri in self.notebook_cell_uris(notebook_uri):
            self.cancel_scheduled(uri)
        key = f"notebook:{notebook_uri}"
        self.cancel_scheduled(key)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.publish_notebook(notebook_uri, only_if_changed=True, edited=set(edited))
            return
        self._edited.setdefault(notebook_uri, set()).update(edited)
        self._pending[key] = loop.call_later(self.change_debounce_s, self._publish_notebook_scheduled, notebook_uri)

    def _publish_notebook_scheduled(self, notebook_uri: str) -> None:
        self._pending.pop(f"notebook:{notebook_uri}", None)
        self.publish_notebook(notebook_uri, only_if_changed=True, edited=self._edited.pop(notebook_uri, set()))

    def publish_notebook(self, notebook_uri: str, only_if_changed: bool = False, edited: set[str] = frozenset()) -> None:
        """Every cell's diagnostics; with ``only_if_changed``, sent for the edited cells (their version moved)
        and for the others whose diagnostics changed."""
        for uri in self.notebook_cell_uris(notebook_uri):
            if unquote(uri) in self.workspace.text_documents:
                self.publish_diagnostics(uri, only_if_changed and unquote(uri) not in edited)

    def publish_all(self) -> None:
        for uri in list(self.workspace.text_documents):
            self.publish_diagnostics(uri)

    def _guarded(self, function, *args, fallback=None):
        """One failing hook costs its own work (its diagnostics), never the others' nor the server."""
        try:
            return function(*args)
        except Exception as error:  # noqa: BLE001 - logged for the user, the server goes on
            self.log(f"{getattr(function, '__qualname__', function)} failed: {type(error).__name__}: {error}",
                     types.MessageType.Error)
            logger.exception("diagnostics step failed")
            return [] if fallback is None else fallback

    def schedule_diagnostics(self, uri: str) -> None:
        """After an edit: publish once no newer edit has arrived for ``change_debounce_s``."""
        self.cancel_scheduled(uri)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (direct calls): nothing to wait on
            self.publish_diagnostics(uri)
            return
        self._pending[uri] = loop.call_later(self.change_debounce_s, self._publish_scheduled, uri)

    def cancel_scheduled(self, uri: str) -> None:
        handle = self._pending.pop(uri, None)
        if handle is not None:
            handle.cancel()

    def _publish_scheduled(self, uri: str) -> None:
        self._pending.pop(uri, None)
        if unquote(uri) in self.workspace.text_documents:  # not closed meanwhile (keys are unquoted)
            self.publish_diagnostics(uri)

    # -- settings -------------------------------------------------------------------------------
    def apply_settings(self, options: object) -> None:
        self.tell("settings_changed", options if isinstance(options, dict) else {})

    def folder_uris(self) -> list[str]:
        folders = list(self.workspace.folders)
        if not folders and self.workspace.root_uri:
            folders = [self.workspace.root_uri]
        return folders

    def folder_of(self, uri: str | None) -> tuple[str | None, str | None]:
        """(folder URI, folder path) of the workspace folder that holds ``uri`` (the first one otherwise)."""
        path = to_fs_path(uri) if uri else None
        best = None
        for folder in self.folder_uris():
            folder_path = to_fs_path(folder)
            if path and folder_path and (path == folder_path or path.startswith(folder_path.rstrip(os.sep) + os.sep)):
                if best is None or len(folder_path) > len(best[1]):
                    best = (folder, folder_path)
        if best is None and self.folder_uris():
            folder = self.folder_uris()[0]
            best = (folder, to_fs_path(folder))
        return best or (None, None)

    def read_settings(self, raw: object) -> Settings:
        """The settings a client sent; values that could not be used are said in the log."""
        settings = parse_settings(raw)
        for problem in settings.problems.values():
            self.log(problem, types.MessageType.Warning)
        return settings

    def settings_for(self, uri: str | None) -> Settings:
        folder, _ = self.folder_of(uri)
        return self.folder_settings.get(folder or "", self.default_settings)

    async def pull_settings(self) -> None:
        """Ask the client for each folder's `vramlens` section (workspace/configuration)."""
        workspace_caps = self.client_capabilities.workspace
        if not (workspace_caps and workspace_caps.configuration):
            return
        folders = self.folder_uris() or [None]
        items = [types.ConfigurationItem(scope_uri=folder, section=SETTINGS_SECTION) for folder in folders]
        try:
            answers = await self.workspace_configuration_async(types.ConfigurationParams(items=items))
        except Exception as error:  # noqa: BLE001 - a client that cannot answer keeps the defaults
            self.log(f"workspace/configuration failed ({error}); using the initialization options.")
            return
        for folder, answer in zip(folders, answers or []):
            if isinstance(answer, dict):
                self.folder_settings[folder or ""] = self.read_settings(answer)
                self.log(f"Settings for {folder or 'the workspace'}: {json.dumps(asdict(self.folder_settings[folder or '']))}")
        first = next((a for a in answers or [] if isinstance(a, dict)), None)
        if first is not None:
            self.apply_settings(first)

    # -- messages to the client -----------------------------------------------------------------
    def log(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=printable(message)))

    def annotations_changed(self) -> None:
        """Figures moved, appeared or went away: clients ask again, diagnostics are published again."""
        workspace_caps = self.client_capabilities.workspace
        if workspace_caps and workspace_caps.inlay_hint and workspace_caps.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)
        if workspace_caps and workspace_caps.code_lens and workspace_caps.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)
        self.protocol.notify(ANNOTATIONS_CHANGED, {})

    def uri_of(self, path: str) -> str:
        return from_fs_path(path) or path

    # -- notebooks ------------------------------------------------------------------------------
    def notebook_view(self, notebook) -> NotebookView:
        """The notebook's code cells as they are now, worked out once per change of the notebook (every
        cell's diagnostics, hints and lenses read it: once per cell would make a notebook quadratic)."""
        view = self._notebook_views.get(notebook.uri)
        if view is None:
            code = [cell for cell in notebook.cells if cell.kind == types.NotebookCellKind.Code]
            cells = []
            for cell in code:
                text = self.workspace.text_documents.get(unquote(cell.document))
                cells.append((cell.document, text.source if text is not None else ""))
            view = self._notebook_views[notebook.uri] = NotebookView(
                to_fs_path(notebook.uri) or notebook.uri, tuple(cells),
                {unquote(cell.document): rank for rank, cell in enumerate(code)})
        return view

    def notebook_changed(self, notebook_uri: str) -> None:
        self._notebook_views.pop(notebook_uri, None)

    def cell_place(self, uri: str) -> tuple[str, int] | None:
        """(the notebook's file path, the cell's 0-based place among all its cells) for a cell document.

        A client sends only the cells its selector matches (VS Code: the Python ones, no markdown), so a
        cell's place is its rank among the code cells, looked up in the notebook file's list of cells."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        path = to_fs_path(notebook.uri) if notebook is not None else None
        if path is None:
            return None
        rank = self.notebook_view(notebook).rank_of.get(unquote(uri))
        places = self._code_cell_places(path)
        if rank is None or places is None or rank >= len(places):
            return None
        return path, places[rank]

    def _code_cell_places(self, path: str) -> list[int] | None:
        """Where the notebook file's code cells are among all its cells (cached while the file is unchanged)."""
        try:
            stamp = os.stat(path).st_mtime_ns
        except OSError:
            return None
        cached = self._notebook_places.get(path)
        if cached is None or cached[0] != stamp:
            cells = notebook_cells(path)
            cached = self._notebook_places[path] = (stamp, [index for index, _id, _source in cells] if cells is not None else None)
        return cached[1]

    def notebook_of(self, document: TextDocument) -> tuple[str, list[tuple[str, str]]] | None:
        """For a cell document: its notebook's path and every code cell's (URI, text), in order."""
        notebook = self.workspace.get_notebook_document(cell_uri=document.uri)
        if notebook is None:
            return None
        view = self.notebook_view(notebook)
        return view.path, view.cells

    def notebook_cell_uris(self, notebook_uri: str) -> list[str]:
        notebook = self.workspace.get_notebook_document(notebook_uri=notebook_uri)
        return [cell.document for cell in notebook.cells] if notebook is not None else []


def _register_document_events(server: VramLensServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: VramLensServer, params: types.InitializeParams) -> None:
        ls.apply_settings(params.initialization_options)
        ls.default_settings = ls.read_settings(params.initialization_options)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: VramLensServer, params: None) -> None:
        """End the scripts still being diagnosed (their captures are kept) and the loads still running
        (their workers are killed) before the server goes."""
        for cancel in ls.cancellable_commands.values():
            cancel.set()
        for load in list(ls.loading.values()):
            load.cancel()
        if ls.running_commands:
            await asyncio.wait(list(ls.running_commands.values()), timeout=SHUTDOWN_WAIT_S)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: VramLensServer, params: types.InitializedParams) -> None:
        await ls.pull_settings()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: VramLensServer, params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings if isinstance(params.settings, dict) else {}
        pushed = settings.get(SETTINGS_SECTION, settings)
        if pushed:
            ls.apply_settings(pushed)
            ls.default_settings = ls.read_settings(pushed)
            ls.folder_settings.clear()
        await ls.pull_settings()
        ls.publish_all()
        if ls.captures.all():  # the annotation style may have changed
            ls.annotations_changed()

    # One handler for every feature's code actions; the kinds are the list the features fill as they are added
    # (read when the client initializes).
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=server.code_action_kinds))
    def code_action(ls: VramLensServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.code_actions(params)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: VramLensServer, params: types.DidOpenTextDocumentParams) -> None:
        document = ls.workspace.get_text_document(params.text_document.uri)
        ls.tell("opened", document)
        ls.publish_diagnostics(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: VramLensServer, params: types.DidChangeTextDocumentParams) -> None:
        document = ls.workspace.get_text_document(params.text_document.uri)
        ls.tell("changed", document, params)
        ls.schedule_diagnostics(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: VramLensServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.publish_diagnostics(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: VramLensServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.cancel_scheduled(params.text_document.uri)
        ls._published.pop(params.text_document.uri, None)
        ls.tell("closed", params.text_document.uri)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


def _register_notebook_events(server: VramLensServer) -> None:
    """Cells of a notebook get the same listeners and diagnostics as files; any edit re-checks every
    cell, since the checks follow values from cell to cell: in one pass over the notebook, once typing
    pauses, and only the cells whose diagnostics changed are sent again."""

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open(ls: VramLensServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.notebook_changed(params.notebook_document.uri)
        for item in params.cell_text_documents:
            document = ls.workspace.get_text_document(item.uri)
            ls.tell("opened", document)
        ls.publish_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change(ls: VramLensServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.notebook_changed(params.notebook_document.uri)
        cells = params.change.cells
        structure = cells.structure if cells else None
        for item in (structure.did_open or []) if structure else []:
            document = ls.workspace.get_text_document(item.uri)
            ls.tell("opened", document)
        for closed in (structure.did_close or []) if structure else []:
            ls.tell("closed", closed.uri)
            ls._published.pop(closed.uri, None)
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=closed.uri, diagnostics=[]))
        for text in (cells.text_content or []) if cells else []:
            document = ls.workspace.get_text_document(text.document.uri)
            change = types.DidChangeTextDocumentParams(text_document=text.document, content_changes=text.changes)
            ls.tell("changed", document, change)
        if structure:  # cells moved: a cell's place (and so its figures) may have changed
            ls.annotations_changed()
        edited = {unquote(text.document.uri) for text in (cells.text_content or [])} if cells else set()
        edited |= {unquote(item.uri) for item in (structure.did_open or [])} if structure else set()
        ls.schedule_notebook(params.notebook_document.uri, edited)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close(ls: VramLensServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.notebook_changed(params.notebook_document.uri)
        ls.cancel_scheduled(f"notebook:{params.notebook_document.uri}")
        for item in params.cell_text_documents:
            ls.cancel_scheduled(item.uri)
            ls._published.pop(item.uri, None)
            ls.tell("closed", item.uri)
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=item.uri, diagnostics=[]))
