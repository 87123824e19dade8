"""The editor habits of a ruff user, over stdio with the real server: a link to each rule's docs, a quick fix that
silences a finding on its line, and ``source.fixAll`` applying every default fix."""

from __future__ import annotations

import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from vramlens.lint import lint_source
from vramlens.lint.engine.suppression import ignored_codes, suppression_edit
from vramlens.lint.engine.fixes import apply_edits

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
URI = "file:///workspace/train.py"


def test_a_comment_silences_the_named_code_on_its_line_only():
    assert [f.code for f in lint_source(LEAKY, preview=True)] == ["VL102"]
    silenced = LEAKY.replace("losses.append(loss)", "losses.append(loss)  # vramlens: ignore[VL102]")
    assert lint_source(silenced, preview=True) == []
    other = LEAKY.replace("losses.append(loss)", "losses.append(loss)  # vramlens: ignore[VL105]")
    assert [f.code for f in lint_source(other, preview=True)] == ["VL102"]
    bare = LEAKY.replace("losses.append(loss)", "losses.append(loss)  # vramlens: ignore")
    assert lint_source(bare, preview=True) == []


def test_the_silencing_edit_adds_a_comment_or_extends_the_one_there():
    line = "        losses.append(loss)"
    edited = apply_edits(line, [suppression_edit(line, 1, "VL102")])
    assert edited == "        losses.append(loss)  # vramlens: ignore[VL102]"
    again = apply_edits(edited, [suppression_edit(edited, 1, "VL105")])
    assert again == "        losses.append(loss)  # vramlens: ignore[VL102, VL105]"
    assert ignored_codes(again) == {"VL102", "VL105"}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "vramlens.lsp"]))
async def client(lsp_client: LanguageClient):
    # preview on: the leak this file uses (VL102) is a preview check by the held-out gate
    params = types.InitializeParams(capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
                                    initialization_options={"lint": {"preview": True}},
                                    root_uri="file:///workspace")
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, text: str) -> list[types.Diagnostic]:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=URI, language_id="python", version=1, text=text)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics[URI])


async def _actions(client: LanguageClient, diagnostics, only=None) -> list[types.CodeAction]:
    found = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=URI),
        range=diagnostics[0].range if diagnostics else types.Range(start=types.Position(0, 0), end=types.Position(0, 0)),
        context=types.CodeActionContext(diagnostics=diagnostics, only=only)))
    return list(found or [])


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start, end = edit.range.start, edit.range.end
        before = "".join(lines[:start.line]) + (lines[start.line][:start.character] if start.line < len(lines) else "")
        after = (lines[end.line][end.character:] if end.line < len(lines) else "") + "".join(lines[end.line + 1:])
        lines = (before + edit.new_text + after).splitlines(keepends=True)
    return "".join(lines)


@pytest.mark.asyncio
async def test_diagnostics_link_to_their_rule_and_can_be_silenced_or_all_fixed(client: LanguageClient):
    diagnostics = await _open(client, LEAKY)
    assert [d.code for d in diagnostics] == ["VL102"]
    href = diagnostics[0].code_description.href
    assert href.endswith("docs/lint.md#vl102") and href.startswith(("file://", "https://"))

    actions = await _actions(client, diagnostics)
    ignore = next(a for a in actions if a.title == "Ignore VL102 on this line")
    assert ignore.kind == types.CodeActionKind.QuickFix and not ignore.is_preferred
    silenced = _apply(LEAKY, ignore.edit.changes[URI])
    assert "losses.append(loss)  # vramlens: ignore[VL102]\n" in silenced
    assert lint_source(silenced, preview=True) == []

    assert not any(a.kind == "source.fixAll.vramlens" for a in actions), "fixAll only when the client asks for it"
    fix_all = await _actions(client, [], only=[types.CodeActionKind.SourceFixAll])
    assert [a.kind for a in fix_all] == ["source.fixAll.vramlens"]
    fixed = _apply(LEAKY, fix_all[0].edit.changes[URI])
    assert "losses.append(loss.detach())" in fixed and lint_source(fixed, preview=True) == []
