"""What every feature of the language server may hear, in one base class.

A feature answers its own requests and commands (``register``: one handler per method, which no
other feature claims) and hears what concerns every feature through the hooks below; the server
calls them for each feature in the order the composition root (app.py) lists them. A hook left
alone does nothing, so a feature writes only those it needs.
"""

from __future__ import annotations

import inspect

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument


class Feature:
    # The kinds of code action this feature offers (``quickfix``, ``source.fixAll.vramlens``): the server
    # answers textDocument/codeAction once for every feature and announces the kinds they name.
    code_action_kinds: tuple[str, ...] = ()

    def register(self, server: LanguageServer) -> None:
        """Install the requests and commands this feature alone answers."""

    # -- the documents ----------------------------------------------------------------------------
    def opened(self, document: TextDocument) -> None:
        """A document (or a notebook's cell) was opened, or reopened from disk."""

    def changed(self, document: TextDocument, params: types.DidChangeTextDocumentParams) -> None:
        """An edit arrived; ``document`` already holds the new text."""

    def closed(self, uri: str) -> None:
        """The document went: whatever was kept for it can go too."""

    # -- what the documents show ------------------------------------------------------------------
    def diagnostics(self, document: TextDocument) -> list[types.Diagnostic]:
        """This feature's diagnostics for the document's current text."""
        return []

    def amend_diagnostics(self, document: TextDocument, diagnostics: list[types.Diagnostic]) -> list[types.Diagnostic]:
        """Every feature's diagnostics, before they are sent: this feature may add to their words."""
        return diagnostics

    def code_actions(self, document: TextDocument, params: types.CodeActionParams) -> list[types.CodeAction]:
        """This feature's code actions for the requested range (and the diagnostics the client sent)."""
        return []

    # -- the server's state -----------------------------------------------------------------------
    def settings_changed(self, options: dict) -> None:
        """The client's `vramlens` settings (initializationOptions, then each configuration change)."""

    def captures_changed(self) -> None:
        """A capture was loaded, cleared, or shows another rank: what was worked out from the last one is stale."""


def handler(method):
    """A feature's bound method as a function pygls can register (pygls labels what it registers, which a
    bound method cannot be); it receives the server first, as ``ls``, like every pygls handler."""
    if inspect.iscoroutinefunction(method):
        async def handle(ls, *arguments):
            return await method(ls, *arguments)
    else:
        def handle(ls, *arguments):
            return method(ls, *arguments)
    handle.__name__, handle.__qualname__, handle.__doc__ = method.__name__, method.__qualname__, method.__doc__
    return handle
