"""`vramlens serve` starts the same server over stdio."""

from __future__ import annotations

import sys

import pytest
import pytest_lsp
from lsprotocol import types
from lsp_helpers import open_document, quick_fixes
from pytest_lsp import ClientServerConfig, LanguageClient

URI = "file:///workspace/predict.py"
SOURCE = "import torch\n\ndef predict(model, x):\n    model.eval()\n    return model(x)\n"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "vramlens", "serve"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
                               initialization_options={"lint": {"preview": True}})  # missing-no-grad is preview
    )
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_serve_publishes_lint_diagnostics_and_decorator_fix(client: LanguageClient):
    diagnostics = await open_document(client, URI, SOURCE)
    assert [d.code for d in diagnostics] == ["VL201"]
    actions = await quick_fixes(client, URI, diagnostics)
    edit = actions[0].edit.changes[URI][0]
    assert edit.new_text == "@torch.no_grad()\n"
    assert edit.range.start == types.Position(line=2, character=0)
