"""A capture whose recorded files are not in the workspace: the message says so, the report carries what
was recorded, and `openCapture` with the folder the user chose (`sourceRoot`) maps the figures there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsp_helpers import CAPTURES, REPO, execute, open_document, plain
from pytest_lsp import LanguageClient

RETAINED = CAPTURES / "retained_references"


@pytest.mark.asyncio
async def test_a_capture_whose_files_are_elsewhere_says_so_and_maps_onto_a_chosen_folder(
        client: LanguageClient, tmp_path: Path):
    # The workspace has no copy of the recorded script: nothing can map.
    total = (CAPTURES / "server_dump.total_memory").read_text().strip()
    outcome = await execute(client, "vramlens.openCapture",
                            {"path": str(CAPTURES / "server_dump.pickle"), "totalMemory": total})
    assert outcome["ok"] is True
    assert "No recorded frame matched a file in this workspace" in outcome["message"]
    assert "choose the source folder" in outcome["message"]
    report = client.reports[-1]
    assert report["unmapped"]["files"] == ["/srv/app/server_dump.py"]
    # The user chooses the folder that holds the sources: the figures land there.
    sources = tmp_path / "elsewhere"
    shutil.copytree(REPO / "scenarios", sources)
    text = (sources / "server_dump.py").read_text()
    await open_document(client, (sources / "server_dump.py").as_uri(), text)
    mapped = await execute(client, "vramlens.openCapture", {"path": str(CAPTURES / "server_dump.pickle"),
                                                            "totalMemory": total, "sourceRoot": str(sources)})
    assert mapped["ok"] is True and "Top line server_dump.py:21" in mapped["message"], mapped
    assert client.reports[-1]["unmapped"] is None
    answer = plain(await client.protocol.send_request_async("vramlens/lineAnnotations", {"uri": (sources / "server_dump.py").as_uri()}))
    assert {a["line"] for a in answer["annotations"]} >= {20}


@pytest.mark.asyncio
async def test_a_missing_source_folder_is_refused_in_one_sentence(client: LanguageClient, tmp_path: Path):
    outcome = await execute(client, "vramlens.openCapture", {"path": str(RETAINED), "sourceRoot": str(tmp_path / "nope")})
    assert outcome["ok"] is False
    assert outcome["message"] == f"Choose an existing folder as the source folder: {tmp_path / 'nope'} is not a folder."
