"""Client-side steps shared by the end-to-end tests: open and edit documents, ask for quick fixes, run commands."""

from __future__ import annotations

from pathlib import Path

import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient


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


REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "tests" / "fixtures" / "captures"


async def execute(client: LanguageClient, command: str, argument: dict) -> dict:
    """Run one of the server's commands with its argument object; return its CommandResult."""
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(command=command, arguments=[argument]))


async def replace_range(client: LanguageClient, uri: str, start: tuple[int, int], end: tuple[int, int], text: str,
                        version: int) -> None:
    """An incremental edit, as an editor sends it; in the order the server handles them."""
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(*start), end=types.Position(*end)), text=text)],
        )
    )


def watch_server_messages(client: LanguageClient) -> None:
    """Answer the refresh requests a VS Code client answers; keep the reports and count the refreshes."""
    client.reports = []
    client.refreshes = []
    client.feature("vramlens/report")(lambda params: client.reports.append(plain(params)))
    for method in (types.WORKSPACE_INLAY_HINT_REFRESH, types.WORKSPACE_CODE_LENS_REFRESH, "vramlens/annotationsChanged"):
        client.feature(method)(lambda params, method=method: client.refreshes.append(method))


def plain(value):
    """A custom notification's params as JSON values (pygls hands them over as named tuples)."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


# The server's checks with the preview ones: these tests use a retained-graph leak (VL102) to exercise the server,
# whichever checks the held-out gate leaves on by default (tests/lsp/test_lint_preview.py covers the default).
PREVIEW = {"lint": {"preview": True}}


async def initialize_with_folder(client: LanguageClient, folder: Path) -> None:
    """Initialize as VS Code does, with ``folder`` as the one workspace folder; keep the server's messages."""
    watch_server_messages(client)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)],
            initialization_options=PREVIEW,
        )
    )


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "vramlens.lsp"]))
async def client(lsp_client: LanguageClient, workspace: Path):
    """The real server over stdio, initialised as VS Code does with the ``workspace`` fixture as its folder."""
    await initialize_with_folder(lsp_client, workspace)
    yield
    await lsp_client.shutdown_session()
