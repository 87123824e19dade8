"""Create the language server: document events and settings fan out to every feature module.

Each feature module exposes ``register(server)``. Instead of claiming LSP notifications for
itself (pygls allows one handler per method), a module adds a diagnostics provider and a
settings listener here, and registers only the requests it alone answers (code actions,
hovers, inlay hints...). Diagnostics from all providers are published together: at once on
open, save and settings changes, and after a short pause in typing for edits.
"""

from __future__ import annotations

import asyncio
from typing import Callable
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from vramlens import __version__
from vramlens.lsp import lint_features

DiagnosticsProvider = Callable[[TextDocument], list[types.Diagnostic]]
SettingsListener = Callable[[dict], None]
SETTINGS_SECTION = "vramlens"  # workspace/didChangeConfiguration: {"vramlens": {...}}
# Edits arrive on every keystroke: diagnostics follow once typing pauses this long, for the latest text only.
CHANGE_DEBOUNCE_S = 0.2

FEATURE_MODULES = (lint_features,)


class VramLensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("vramlens", __version__)
        self.diagnostics_providers: list[DiagnosticsProvider] = []
        self.settings_listeners: list[SettingsListener] = []
        self.change_debounce_s = CHANGE_DEBOUNCE_S
        self._pending: dict[str, asyncio.TimerHandle] = {}  # uri -> diagnostics scheduled after an edit

    def publish_diagnostics(self, uri: str) -> None:
        """Diagnostics for the document's current text, now (open, save, settings); drops a scheduled run."""
        self.cancel_scheduled(uri)
        document = self.workspace.get_text_document(uri)
        diagnostics = [d for provider in self.diagnostics_providers for d in provider(document)]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=document.version, diagnostics=diagnostics)
        )

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

    def apply_settings(self, options: object) -> None:
        for listener in self.settings_listeners:
            listener(options if isinstance(options, dict) else {})


def _register_document_events(server: VramLensServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: VramLensServer, params: types.InitializeParams) -> None:
        ls.apply_settings(params.initialization_options)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: VramLensServer, params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings if isinstance(params.settings, dict) else {}
        ls.apply_settings(settings.get(SETTINGS_SECTION, settings))
        for uri in list(ls.workspace.text_documents):
            ls.publish_diagnostics(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: VramLensServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.publish_diagnostics(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: VramLensServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule_diagnostics(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: VramLensServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.publish_diagnostics(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: VramLensServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.cancel_scheduled(params.text_document.uri)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


def create_server() -> VramLensServer:
    server = VramLensServer()
    _register_document_events(server)
    for module in FEATURE_MODULES:
        module.register(server)
    return server


def serve() -> None:
    create_server().start_io()
