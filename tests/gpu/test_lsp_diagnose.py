"""The editor's "Diagnose CUDA memory" on a real GPU, through the real language server over stdio.

The server runs scenarios/working_set.py under vramlens (a 5 GiB emulated card), reports live
figures while it runs, and loads the capture: the cause, the OOM diagnostic and the inlay hints
must agree with `vramlens analyze --json` of the capture the command wrote.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import REPO, client, execute, open_document  # noqa: F401  (tests/lsp; client: the server fixture)

pytestmark = pytest.mark.gpu


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    for name in ("working_set.py", "ddp_uneven.py"):
        shutil.copy(REPO / "scenarios" / name, tmp_path / name)
    return tmp_path


def _culprit_lines(script: Path) -> set[int]:
    return {number for number, text in enumerate(script.read_text().splitlines()) if "# vramlens: culprit" in text}


@pytest.mark.asyncio
async def test_diagnose_runs_the_file_and_loads_figures_that_match_the_cli(client: LanguageClient, workspace: Path, vramlens):
    script = workspace / "working_set.py"
    uri = script.as_uri()
    await open_document(client, uri, script.read_text())
    outcome = await execute(client, "vramlens.diagnose", {
        "uri": uri, "trusted": True, "interpreter": sys.executable, "memoryLimit": "5GiB"})
    assert outcome["ok"] is True, outcome
    assert "working_set" in outcome["message"]

    (messages,) = [[getattr(value, "message", None) for value in values] for values in client.progress_reports.values()]
    assert messages[1] == "Starting working_set.py" and "Analysing the capture" in messages
    assert any(message and message.startswith("Running: ") for message in messages)

    capture = Path(outcome["capture"])
    cli = vramlens("analyze", "--json", capture)
    assert cli.returncode == 0, cli.stderr
    expected = json.loads(cli.stdout)
    assert expected["cause"] == "working_set"
    assert client.reports[-1]["analysis"]["cause"] == expected["cause"]
    assert client.reports[-1]["analysis"]["memory"] == expected["memory"]

    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=10_000, character=0))))
    hinted = {hint.position.line for hint in hints}
    cli_lines = {line["line"] - 1 for line in expected["lines"]
                 if line["path"] and line["path"].endswith("working_set.py")
                 and (line["live_bytes"] > 0 or line["allocated_bytes"] > 0)}
    assert hinted == cli_lines
    assert _culprit_lines(script) <= hinted

    (oom,) = [d for d in client.diagnostics[uri] if d.code == "VL-OOM"]
    assert oom.severity == types.DiagnosticSeverity.Error
    assert oom.range.start.line == expected["oom"]["site"]["line"] - 1



@pytest.mark.asyncio
async def test_diagnose_with_two_processes_per_node_shows_the_rank_that_ran_out(client: LanguageClient, workspace: Path,
                                                                                vramlens):
    """Two ranks over NCCL, one GPU each: the editor's "processes per node" setting through the real server."""
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs (NCCL refuses two ranks on one device)")
    script = workspace / "ddp_uneven.py"
    outcome = await execute(client, "vramlens.diagnose", {
        "uri": script.as_uri(), "trusted": True, "interpreter": sys.executable, "memoryLimit": "2560MiB",
        "timeoutSeconds": 120, "processesPerNode": 2,
        "env": {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}})
    assert outcome["ok"] is True, outcome
    report = client.reports[-1]
    cli = vramlens("analyze", "--json", outcome["capture"])
    assert cli.returncode == 0, cli.stderr
    ranks = json.loads(cli.stdout)["ranks"]
    assert report["failingRank"] == report["selectedRank"] == ranks["failing_rank"] == 1
    rows = {row["rank"]: row for row in report["ranks"]}
    assert rows[1]["ending"] == "oom" and rows[0]["ending"] != "oom"
    assert all(row["outsidePytorch"] > 512 * 2**20 for row in rows.values())  # NCCL's buffers and the context
