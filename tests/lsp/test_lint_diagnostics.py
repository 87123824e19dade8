"""End to end over stdio: the real server publishes lint diagnostics and serves working quick fixes."""

from __future__ import annotations

import asyncio
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from lsp_helpers import PREVIEW, open_document, quick_fixes
from pytest_lsp import ClientServerConfig, LanguageClient

LEAKY = """\
import torch
import torch.nn as nn

model = nn.Linear(4, 4)
criterion = nn.MSELoss()

def train(loader, optimizer):
    losses = []
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss)
    return losses
"""
LEAKY_LINE = 12  # 0-based line of `losses.append(loss)`
URI = "file:///workspace/train.py"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "vramlens.lsp"]))
async def client(lsp_client: LanguageClient):
    params = types.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
        root_uri="file:///workspace",
        initialization_options=PREVIEW,
    )
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, text: str, version: int = 1) -> list[types.Diagnostic]:
    return await open_document(client, URI, text, version)


async def _replace_all(client: LanguageClient, text: str, version: int) -> list[types.Diagnostic]:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics[URI])


@pytest.mark.asyncio
async def test_diagnostics_appear_for_a_leaky_file(client: LanguageClient):
    diagnostics = await _open(client, LEAKY)
    assert len(diagnostics) == 1
    diagnostic = diagnostics[0]
    assert diagnostic.code == "VL102"
    assert diagnostic.source == "vramlens"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.range.start == types.Position(line=LEAKY_LINE, character=8)
    assert diagnostic.data["rule"] == "retained-graph"
    assert "autograd" in diagnostic.message


@pytest.mark.asyncio
async def test_diagnostics_disappear_after_an_edit_that_fixes_it(client: LanguageClient):
    await _open(client, LEAKY)
    fixed = LEAKY.replace("losses.append(loss)", "losses.append(loss.item())")
    assert await _replace_all(client, fixed, version=2) == []


@pytest.mark.asyncio
async def test_syntax_error_is_one_diagnostic_not_a_crash(client: LanguageClient):
    diagnostics = await _open(client, "def broken(:\n")
    assert [d.code for d in diagnostics] == ["VL000"]
    assert diagnostics[0].severity == types.DiagnosticSeverity.Error


@pytest.mark.asyncio
async def test_quick_fix_returns_a_working_edit(client: LanguageClient):
    diagnostics = await _open(client, LEAKY)
    actions = await quick_fixes(client, URI, diagnostics)
    assert actions, "no code actions"
    preferred = actions[0]
    assert preferred.kind == types.CodeActionKind.QuickFix
    assert preferred.is_preferred
    assert list(preferred.diagnostics) == diagnostics
    assert ".detach()" in preferred.title
    assert any(".item()" in action.title for action in actions)

    edits = preferred.edit.changes[URI]
    lines = LEAKY.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start, end = edit.range.start, edit.range.end
        assert start.line == end.line
        line = lines[start.line]
        lines[start.line] = line[: start.character] + edit.new_text + line[end.character :]
    fixed_text = "".join(lines)
    assert "losses.append(loss.detach())" in fixed_text
    assert await _replace_all(client, fixed_text, version=2) == []


@pytest.mark.asyncio
async def test_no_code_actions_for_foreign_diagnostics(client: LanguageClient):
    diagnostics = await _open(client, LEAKY)
    foreign = [types.Diagnostic(range=diagnostics[0].range, message="other", source="pylint", code="W0001")]
    assert await quick_fixes(client, URI, foreign) == []


@pytest.mark.asyncio
async def test_configuration_change_applies_select_and_ignore(client: LanguageClient):
    assert [d.code for d in await _open(client, LEAKY)] == ["VL102"]
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"vramlens": {"lint": {"ignore": ["retained-graph"]}}})
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[URI]) == []


def _change(client: LanguageClient, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


@pytest.mark.asyncio
async def test_a_burst_of_edits_ends_with_diagnostics_for_the_final_text(client: LanguageClient):
    await _open(client, LEAKY)
    fixed = LEAKY.replace("losses.append(loss)", "losses.append(loss.item())")
    final = "\n\n" + LEAKY  # leaky again, two lines lower: only the final text puts the finding there
    edits = [fixed if index % 2 == 0 else LEAKY for index in range(19)] + [final]
    for version, text in enumerate(edits, start=2):
        _change(client, text, version)  # faster than anyone types: one lint should follow, not twenty
    final_version = len(edits) + 1

    published: list[types.PublishDiagnosticsParams] = []
    while not published or published[-1].version != final_version:
        published.append(await asyncio.wait_for(client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 10))
    diagnostics = list(client.diagnostics[URI])
    assert [d.code for d in diagnostics] == ["VL102"]
    assert diagnostics[0].range.start == types.Position(line=LEAKY_LINE + 2, character=8)
    assert len(published) < len(edits) // 2, "edits were not debounced"


@pytest.mark.asyncio
async def test_save_publishes_the_latest_text(client: LanguageClient):
    await _open(client, LEAKY)
    fixed = LEAKY.replace("losses.append(loss)", "losses.append(loss.item())")
    _change(client, fixed, version=2)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=URI)))
    params = await asyncio.wait_for(client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 10)
    assert params.version == 2 and list(params.diagnostics) == []
