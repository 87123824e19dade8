"""Client-side steps shared by the end-to-end tests: open a document, ask for quick fixes."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient


async def open_document(client: LanguageClient, uri: str, text: str, version: int = 1) -> list[types.Diagnostic]:
    """Open ``text`` as ``uri`` and return the diagnostics the server publishes for it."""
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics[uri])


async def quick_fixes(client: LanguageClient, uri: str, diagnostics: list[types.Diagnostic]) -> list[types.CodeAction]:
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostics[0].range,
            context=types.CodeActionContext(diagnostics=diagnostics),
        )
    )
    return list(actions or [])
