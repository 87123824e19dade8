"""Files the language server opens or writes, through the real server over stdio (pytest-lsp): a FIFO,
a device or a link to one is refused in one sentence and never blocks the server; the report is
written only inside the workspace or where the save dialog chose.

Each FIFO case ends with a second request that must be answered: a server blocked on a FIFO
answers nothing more."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import CAPTURES, client, execute  # noqa: F401  (tests/lsp: the real server over stdio)

RETAINED = CAPTURES / "retained_references"
ANSWER_S = 15


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


async def command(client: LanguageClient, name: str, argument: dict) -> dict:
    return await asyncio.wait_for(execute(client, name, argument), ANSWER_S)


async def still_answers(client: LanguageClient) -> None:
    cleared = await command(client, "vramlens.clearCapture", {})
    assert cleared["ok"] is True


@pytest.mark.asyncio
async def test_export_to_a_fifo_is_refused_without_blocking(client: LanguageClient, workspace: Path):
    assert (await command(client, "vramlens.openCapture", {"path": str(RETAINED)}))["ok"]
    pipe = workspace / "report.md"
    os.mkfifo(pipe)
    answer = await command(client, "vramlens.exportReport", {"path": str(pipe)})
    assert answer["ok"] is False and "named pipe" in answer["message"], answer
    assert pipe.is_fifo()
    await still_answers(client)


@pytest.mark.asyncio
async def test_export_outside_the_workspace_needs_the_save_dialog_and_makes_no_folders(client: LanguageClient,
                                                                                     workspace: Path, tmp_path: Path):
    assert (await command(client, "vramlens.openCapture", {"path": str(RETAINED)}))["ok"]
    outside = tmp_path / "elsewhere"
    answer = await command(client, "vramlens.exportReport", {"path": str(outside / "deep" / "r.md")})
    assert answer["ok"] is False and "outside the workspace" in answer["message"], answer
    answer = await command(client, "vramlens.exportReport", {"path": str(outside / "deep" / "r.md"), "chosenInSaveDialog": True})
    assert answer["ok"] is False and "does not exist" in answer["message"], answer
    assert not outside.exists()  # no folder was made outside the workspace
    outside.mkdir()
    answer = await command(client, "vramlens.exportReport", {"path": str(outside / "r.md"), "chosenInSaveDialog": True})
    assert answer["ok"] is True and (outside / "r.md").read_text().startswith("# GPU memory report")
    inside = workspace / "reports" / "nested" / "r.md"
    answer = await command(client, "vramlens.exportReport", {"path": str(inside)})
    assert answer["ok"] is True and inside.is_file() and (inside.parent / "r-timeline.svg").is_file()
    escape = workspace / "link-out"
    escape.symlink_to(tmp_path)
    answer = await command(client, "vramlens.exportReport", {"path": str(escape / "sneaky" / "r.md")})
    assert answer["ok"] is False and not (tmp_path / "sneaky").exists()  # a link inside that leads outside is outside


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["fifo", "dev-zero-link", "fifo-in-folder"])
async def test_open_capture_of_a_json_that_is_no_file_is_one_sentence(client: LanguageClient, workspace: Path, kind: str):
    if kind == "fifo":
        target = workspace / "experiment-results.json"
        os.mkfifo(target)
    elif kind == "dev-zero-link":
        target = workspace / "zero.json"
        target.symlink_to("/dev/zero")
    else:
        target = workspace / "runs"
        target.mkdir()
        os.mkfifo(target / "experiment.json")
    answer = await command(client, "vramlens.openCapture", {"path": str(target)})
    assert answer["ok"] is False, answer
    assert ("named pipe" in answer["message"] or "character device" in answer["message"]), answer
    assert "Traceback" not in answer["message"] and len(answer["message"]) < 400
    await still_answers(client)


@pytest.mark.asyncio
async def test_a_notebook_whose_file_is_a_fifo_never_blocks_the_hints(client: LanguageClient, workspace: Path):
    assert (await command(client, "vramlens.openCapture", {"path": str(CAPTURES / "notebook_kept_outputs")}))["ok"]
    path = workspace / "book.ipynb"
    os.mkfifo(path)
    uri = f"vscode-notebook-cell:{path}#W0sZmlsZQ"
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(uri=path.as_uri(), notebook_type="jupyter-notebook", version=1,
                                                 cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=uri)]),
        cell_text_documents=[types.TextDocumentItem(uri=uri, language_id="python", version=1, text="x = 1\ny = 2\n")]))
    hints = await asyncio.wait_for(client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(0, 0), end=types.Position(2, 0)))), ANSWER_S)
    assert not hints  # nothing can be placed on a cell of a notebook that cannot be read
    await still_answers(client)
