"""initializationOptions.lint.preview turns preview checks on in the editor (they are off by default)."""

from __future__ import annotations

import sys

import pytest
import pytest_lsp
from lsprotocol import types
from lsp_helpers import open_document
from pytest_lsp import ClientServerConfig, LanguageClient

from vramlens.lint import CHECKS

SOURCE = "import torch\n\ndef train(loader, device):\n    for x in loader:\n        w = torch.zeros(4).to(device)\n        x.backward()\n"


def _server(preview: bool):
    @pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "vramlens.lsp"]))
    async def client(lsp_client: LanguageClient):
        options = {"lint": {"preview": True}} if preview else {}
        await lsp_client.initialize_session(types.InitializeParams(
            capabilities=pytest_lsp.client_capabilities("visual-studio-code"), initialization_options=options))
        yield
        await lsp_client.shutdown_session()
    return client


with_preview = _server(True)
without_preview = _server(False)


def test_the_example_is_a_preview_check():
    assert next(c for c in CHECKS if c.code == "VL501").preview


@pytest.mark.asyncio
async def test_preview_checks_are_off_by_default(without_preview: LanguageClient):
    assert await open_document(without_preview, "file:///w/a.py", SOURCE) == []


@pytest.mark.asyncio
async def test_the_preview_setting_turns_them_on(with_preview: LanguageClient):
    diagnostics = await open_document(with_preview, "file:///w/a.py", SOURCE)
    assert [d.code for d in diagnostics] == ["VL501"]
