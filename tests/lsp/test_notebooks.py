"""Notebooks through the real server over stdio: the cells arrive as a notebook document (as VS Code's
notebook view sends them), `vramlens.diagnose` on the .ipynb runs it in a fresh kernel with the
stand-in torch and puts the figures, hovers and the OOM diagnostic on the right cells' lines, and
the static checks follow values from one cell into the next."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import nbformat
import pytest
from lsprotocol import types
from lsp_helpers import REPO, execute
from pytest_lsp import LanguageClient

DOUBLE = REPO / "tests" / "agent_double"
CELLS = [
    ("markdown", "# Features"),
    ("code", "import torch\nfeatures = torch.empty(2**30)"),
    ("code", "def grow(n):\n    scratch = torch.empty(n * 2**30)\n    return torch.empty(8 * 2**30)\n\nout = grow(3)"),
]


def write_notebook(folder: Path, cells=CELLS) -> Path:
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(text) if kind == "code" else nbformat.v4.new_markdown_cell(text)
                  for kind, text in cells]
    path = folder / "features.ipynb"
    nbformat.write(book, str(path))
    return path


def cell_uri(path: Path, index: int) -> str:
    return f"vscode-notebook-cell:{path}#W{index}sZmlsZQ"  # the shape of VS Code's cell URIs


def open_notebook(client: LanguageClient, path: Path, cells=CELLS, code_only: bool = False) -> dict[int, str]:
    """Cell place -> the URI sent for it. With ``code_only`` only the Python cells are sent, as VS Code does
    (its selector's cells); otherwise every cell, as a client may."""
    places = [index for index, (kind, _) in enumerate(cells) if kind == "code" or not code_only]
    uris = [cell_uri(path, index) for index in places]
    cells = [cells[index] for index in places]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=path.as_uri(), notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=types.NotebookCellKind.Code if kind == "code" else types.NotebookCellKind.Markup,
                                      document=uri) for (kind, _), uri in zip(cells, uris)]),
        cell_text_documents=[types.TextDocumentItem(uri=uri, language_id="python" if kind == "code" else "markdown",
                                                    version=1, text=text) for (kind, text), uri in zip(cells, uris)],
    ))
    return dict(zip(places, uris))


async def annotations(client: LanguageClient, uri: str) -> dict[int, dict]:
    answer = await client.protocol.send_request_async("vramlens/lineAnnotations", {"uri": uri})
    return {entry.line: entry for entry in answer.annotations}


async def diagnostics_of(client: LanguageClient, uri: str, timeout: float = 10) -> list[types.Diagnostic]:
    for _ in range(int(timeout / 0.05)):
        if uri in client.diagnostics:
            return list(client.diagnostics[uri])
        await asyncio.sleep(0.05)
    raise AssertionError(f"no diagnostics for {uri}")


@pytest.mark.asyncio
@pytest.mark.parametrize("code_only", [True, False])
async def test_diagnose_a_notebook_puts_the_figures_on_its_cells(client: LanguageClient, workspace: Path, code_only: bool):
    path = write_notebook(workspace)
    uris = open_notebook(client, path, code_only=code_only)
    outcome = await execute(client, "vramlens.diagnose", {"uri": path.as_uri(), "trusted": True, "interpreter": sys.executable,
                                                          "env": {"PYTHONPATH": str(DOUBLE)}})
    assert outcome["ok"], outcome
    assert "Top line features.ipynb cell 3 line 2." in outcome["message"]
    progress = [v.message for values in client.progress_reports.values() for v in values if getattr(v, "message", None)]
    assert any(message.startswith("Cell 3 (2 of 2 code cells)") for message in progress), progress

    first, second = await annotations(client, uris[1]), await annotations(client, uris[2])
    assert list(first) == [1] and first[1].text == "1.00 GiB · 25%" and first[1].longText.startswith("1.00 GiB live · 25% at the OOM")
    assert list(second) == [1] and second[1].text == "3.00 GiB · 75%" and second[1].longText.startswith("3.00 GiB live · 75% at the OOM")
    assert "features.ipynb cell 3 line 2" in second[1].hover
    if not code_only:
        assert await annotations(client, uris[0]) == {}  # the markdown cell

    errors = [d for d in await diagnostics_of(client, uris[2]) if d.code == "VL-OOM"]
    assert [d.range.start.line for d in errors] == [2] and "8.00 GiB request failed here" in errors[0].message

    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uris[2]), position=types.Position(line=1, character=4)))
    assert "3.00 GiB" in hover.contents.value

    # A cell moved: the figures follow the cell's place, and a changed line says so instead of lying.
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=path.as_uri(), version=2),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=uris[2], version=2),
                changes=[types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(1, 14), end=types.Position(1, 36)), text="None")])]))))
    await asyncio.sleep(0.3)
    assert (await annotations(client, uris[2]))[1].stale


@pytest.mark.asyncio
async def test_static_checks_follow_values_across_cells(client: LanguageClient, workspace: Path):
    cells = [("code", "import torch\nlosses = []"), ("markdown", "training"),
             ("code", "%matplotlib inline\nfor x, y in loader:\n    loss = criterion(model(x), y)\n    loss.backward()\n    losses.append(loss)")]
    path = workspace / "train.ipynb"
    uris = open_notebook(client, path, cells)
    found = await diagnostics_of(client, uris[2])
    retained = [d for d in found if d.data and d.data.get("rule") == "retained-graph"]
    assert [d.range.start.line for d in retained] == [4]  # `losses` comes from another cell; the magic line is skipped
    assert not [d for d in await diagnostics_of(client, uris[0]) if d.data and d.data.get("rule") == "retained-graph"]
    fixes = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uris[2]), range=retained[0].range,
        context=types.CodeActionContext(diagnostics=retained)))
    edits = [edit for action in fixes for edit in action.edit.changes[uris[2]]]
    assert edits and all(edit.range.start.line == 4 for edit in edits)
