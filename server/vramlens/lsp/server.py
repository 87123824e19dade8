"""Create the language server and register every feature module on it.

Each feature module exposes ``register(server)`` and owns its handlers, so new features
(hovers, inlay hints from GPU captures...) are added here with one line.
"""

from __future__ import annotations

from pygls.lsp.server import LanguageServer

from vramlens import __version__
from vramlens.lsp import lint_features

FEATURE_MODULES = (lint_features,)


def create_server() -> LanguageServer:
    server = LanguageServer("vramlens", __version__)
    for module in FEATURE_MODULES:
        module.register(server)
    return server


def serve() -> None:
    create_server().start_io()
