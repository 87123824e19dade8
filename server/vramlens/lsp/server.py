"""Create the language server: document events and settings fan out to every feature module.

Each feature module exposes ``register(server)``. Instead of claiming LSP notifications for
itself (pygls allows one handler per method), a module adds a diagnostics provider and a
settings listener here, and registers only the requests it alone answers (code actions,
hovers, inlay hints...). Diagnostics from all providers are published together.
"""

from __future__ import annotations

from typing import Callable

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from vramlens import __version__
from vramlens.lsp import lint_features

DiagnosticsProvider = Callable[[TextDocument], list[types.Diagnostic]]
SettingsListener = Callable[[dict], None]
SETTINGS_SECTION = "vramlens"  # workspace/didChangeConfiguration: {"vramlens": {...}}

FEATURE_MODULES = (lint_features,)


class VramLensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("vramlens", __version__)
        self.diagnostics_providers: list[DiagnosticsProvider] = []
        self.settings_listeners: list[SettingsListener] = []

    def publish_diagnostics(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        diagnostics = [d for provider in self.diagnostics_providers for d in provider(document)]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=document.version, diagnostics=diagnostics)
        )

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
        ls.publish_diagnostics(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: VramLensServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.publish_diagnostics(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: VramLensServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


def create_server() -> VramLensServer:
    server = VramLensServer()
    _register_document_events(server)
    for module in FEATURE_MODULES:
        module.register(server)
    return server


def serve() -> None:
    create_server().start_io()
