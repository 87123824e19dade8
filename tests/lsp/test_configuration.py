"""Settings come from workspace/configuration per workspace folder and are read again on change."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from lsp_helpers import CAPTURES, REPO, execute, initialize_with_folder, open_document, plain
from pytest_lsp import ClientServerConfig, LanguageClient


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "vramlens.lsp"]))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    lsp_client.set_configuration({"annotationStyle": "off", "lint": {"ignore": ["retained-graph"], "preview": True}},
                                 section="vramlens", scope_uri=tmp_path.as_uri())
    await initialize_with_folder(lsp_client, tmp_path)
    yield
    await lsp_client.shutdown_session()


async def _settings_read(client: LanguageClient, count: int) -> None:
    for _ in range(100):
        if sum(m.message.startswith("Settings for ") for m in client.log_messages) >= count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the server never read its settings")


async def _hint_lines(client: LanguageClient, uri: str) -> list[int]:
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=100, character=0))))
    return [hint.position.line for hint in hints or []]


@pytest.mark.asyncio
async def test_folder_settings_are_pulled_and_read_again_on_change(client: LanguageClient, tmp_path: Path):
    await _settings_read(client, 1)
    script = tmp_path / "scenarios" / "retained_references.py"
    uri = script.as_uri()
    diagnostics = await open_document(client, uri, script.read_text())
    assert "VL102" not in {d.code for d in diagnostics} and "VL202" in {d.code for d in diagnostics}
    assert (await execute(client, "vramlens.openCapture", {"path": str(CAPTURES / "retained_references")}))["ok"]
    assert any(m.message.startswith("Loaded ") for m in client.log_messages)  # window/logMessage

    assert await _hint_lines(client, uri) == []  # annotationStyle "off": no inlay hints
    records = plain(await client.protocol.send_request_async("vramlens/lineAnnotations", {"uri": uri}))["annotations"]
    assert [r["line"] for r in records] == [11, 18, 19, 20]  # the client's own rendering still gets them (20: the storing line)

    client.set_configuration({"annotationStyle": "inlayHints", "lint": {"preview": True}}, section="vramlens",
                             scope_uri=tmp_path.as_uri())
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await _settings_read(client, 2)
    for _ in range(100):  # diagnostics are published again once the settings are read
        if "VL102" in {d.code for d in client.diagnostics[uri]}:
            break
        await asyncio.sleep(0.05)
    assert "VL102" in {d.code for d in client.diagnostics[uri]}
    assert await _hint_lines(client, uri) == [11, 18, 19, 20]  # 20: the line that keeps the memory
