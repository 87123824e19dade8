"""initializationOptions.lint selects which checks the server reports."""

from __future__ import annotations

import sys

import pytest
import pytest_lsp
from lsprotocol import types
from lsp_helpers import open_document
from pytest_lsp import ClientServerConfig, LanguageClient

URI = "file:///workspace/loop.py"
SOURCE = (
    "import torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 2)\nkeep = []\n\n"
    "def train(loader):\n    for x in loader:\n        keep.append(model(x))\n        torch.cuda.empty_cache()\n"
)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "vramlens.lsp"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
            initialization_options={"lint": {"select": ["empty-cache-in-loop"]}},
        )
    )
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_only_selected_checks_are_published(client: LanguageClient):
    diagnostics = await open_document(client, URI, SOURCE)
    assert [d.code for d in diagnostics] == ["VL401"]
    assert diagnostics[0].severity == types.DiagnosticSeverity.Information
