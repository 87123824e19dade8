"""A torchrun launch in the editor, over stdio: the committed captures of both ranks
(tests/fixtures/ranks, recorded on two H200s) loaded into the real server. The failing rank is
shown first; `vramlens.selectRank` switches every figure to another rank; hovers show the line's
spread across ranks. Expected figures come from the analysis itself, never typed in."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from lsp_helpers import REPO, execute, open_document
from pytest_lsp import LanguageClient

from vramlens.analysis.ranks.analyze import analyze_ranks
from vramlens.lsp.annotations import hint_text
from vramlens.units import format_bytes

RANKS = REPO / "tests" / "fixtures" / "ranks"
UNEVEN = RANKS / "two_gpu_nccl" / "ddp_uneven"
INPUTS, FORWARD = 36, 37  # scenarios/ddp_uneven.py, 0-based: torch.randn(batch, …) and model(inputs), the OOM


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    return tmp_path


def _expected(folder: Path, workspace: Path) -> dict[int, dict[int, str]]:
    """rank -> 1-based line -> its hint text, from analysing each rank's capture onto the workspace."""
    comparison = analyze_ranks(folder, source_root=str(workspace / "scenarios"))
    return {summary.rank: {line.line: hint_text(line, summary.analysis.accounting.moment)
                           for line in summary.analysis.lines if line.path and line.line}
            for summary in comparison.ranks}


async def _hints(client: LanguageClient, uri: str) -> dict[int, str]:
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=10_000, character=0))))
    return {hint.position.line: hint.label for hint in hints or []}


async def _open(client: LanguageClient, workspace: Path) -> str:
    path = workspace / "scenarios" / "ddp_uneven.py"
    await open_document(client, path.as_uri(), path.read_text())
    return path.as_uri()


@pytest.mark.asyncio
@pytest.mark.parametrize("layout", ["two_gpu_nccl/ddp_uneven", "one_gpu_gloo/ddp_two_nodes", "two_gpu_nccl"])
async def test_the_failing_rank_is_shown_first_and_the_report_lists_every_rank(client: LanguageClient, workspace: Path, layout):
    uri = await _open(client, workspace)
    outcome = await execute(client, "vramlens.openCapture", {"path": str(RANKS / layout)})
    assert outcome["ok"] is True, outcome
    assert outcome["message"].startswith("Rank 1 of 2 (the rank that failed first): ")
    assert "Run: out of memory" in outcome["message"]
    report = client.reports[-1]
    assert report["selectedRank"] == 1 == report["failingRank"]
    comparison = analyze_ranks(RANKS / layout)
    rows = {row["rank"]: row for row in report["ranks"]}
    assert set(rows) == {0, 1}
    for summary in comparison.ranks:
        row = rows[summary.rank]
        assert (row["ending"], row["peakAllocated"], row["peakReserved"], row["driverUsed"], row["outsidePytorch"]) == (
            summary.ending, summary.peak_allocated, summary.peak_reserved, summary.peak_driver_visible, summary.outside_pytorch)
    assert rows[1]["failed"] and rows[1]["failing"] and rows[1]["ending"] == "oom"
    assert not rows[0]["failed"] and rows[0]["collateral"] and rows[0]["ending"] in ("stopped", "collective_error")
    assert report["analysis"]["status"] == "oom" and "ranks" not in report["analysis"]
    diagnostics = client.diagnostics[uri]
    assert [(d.code, d.range.start.line) for d in diagnostics if d.code == "VL-OOM"] == [("VL-OOM", FORWARD)]


@pytest.mark.asyncio
async def test_select_rank_moves_hints_diagnostics_and_report_to_that_rank(client: LanguageClient, workspace: Path):
    uri = await _open(client, workspace)
    expected = _expected(UNEVEN, workspace)
    assert (await execute(client, "vramlens.openCapture", {"path": str(UNEVEN)}))["ok"]
    shown = await _hints(client, uri)
    assert shown[FORWARD] == expected[1][FORWARD + 1] and shown[INPUTS] == expected[1][INPUTS + 1]

    outcome = await execute(client, "vramlens.selectRank", {"rank": 0})
    assert outcome["ok"] is True and outcome["message"].startswith("Rank 0 of 2: "), outcome
    shown = await _hints(client, uri)
    assert {line: shown[line] for line in (INPUTS, FORWARD)} == {line: expected[0][line + 1] for line in (INPUTS, FORWARD)}
    assert shown[FORWARD] != expected[1][FORWARD + 1]
    assert client.reports[-1]["selectedRank"] == 0 and client.reports[-1]["analysis"]["status"] != "oom"
    assert not [d for d in client.diagnostics[uri] if d.code == "VL-OOM"], "rank 0 did not run out of memory"

    refused = await execute(client, "vramlens.selectRank", {"rank": 7})
    assert refused["ok"] is False and refused["message"] == (
        "There is no analysed capture of rank 7 here; the ranks shown are 0, 1.")
    assert (await execute(client, "vramlens.selectRank", {"rank": 1}))["ok"]
    assert client.reports[-1]["selectedRank"] == 1


@pytest.mark.asyncio
async def test_hover_shows_the_spread_across_ranks(client: LanguageClient, workspace: Path):
    uri = await _open(client, workspace)
    assert (await execute(client, "vramlens.openCapture", {"path": str(UNEVEN)}))["ok"]
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=FORWARD, character=8)))
    spread = analyze_ranks(UNEVEN).spread_at("scenarios/ddp_uneven.py", FORWARD + 1)
    low, high = spread.live_by_rank[0], spread.live_by_rank[1]
    assert high > low > 0
    assert (f"**Across ranks**: rank 0: {format_bytes(low)} · rank 1: {format_bytes(high)}" in hover.contents.value)
    assert f"min {format_bytes(low)} (rank 0) · max {format_bytes(high)} (rank 1)" in hover.contents.value


@pytest.mark.asyncio
async def test_select_rank_on_a_single_capture_says_there_is_none(client: LanguageClient, workspace: Path):
    single = UNEVEN / "rank-1"
    assert (await execute(client, "vramlens.openCapture", {"path": str(single)}))["ok"]
    assert client.reports[-1]["ranks"] is None
    outcome = await execute(client, "vramlens.selectRank", {"rank": 0})
    assert outcome == {"ok": False, "message": "The loaded capture is of one process: there is no other rank to show.",
                       "capture": str(single.resolve()), "workspaceFolder": workspace.as_uri()}


@pytest.mark.asyncio
async def test_diagnose_with_processes_per_node_loads_every_rank(client: LanguageClient, workspace: Path):
    """The real torchrun (CPU torch) starts two ranks, each with the stand-in torch of tests/agent_double/ranks."""
    pytest.importorskip("torch.distributed.run")
    script = workspace / "uneven.py"
    script.write_text(
        "import os, time\n"
        "import torch\n"
        "shard = torch.empty(2**30)  # every rank's share\n"
        "if int(os.environ['RANK']) == 1:\n"
        "    time.sleep(0.5)\n"
        "    larger = torch.empty(8 * 2**30)  # more than the pretend 8 GiB device\n"
        "else:\n"
        "    time.sleep(120)  # waits for its peer\n")
    site = REPO / "tests" / "agent_double" / "ranks"
    outcome = await execute(client, "vramlens.diagnose", {
        "uri": script.as_uri(), "trusted": True, "interpreter": sys.executable, "processesPerNode": 2,
        "env": {"PYTHONPATH": f"{site}:{REPO / 'server'}", "PYTORCH_CUDA_ALLOC_CONF": ""}})
    assert outcome["ok"] is True, outcome
    capture = Path(outcome["capture"])
    assert sorted(p.name for p in capture.iterdir() if p.name.startswith("rank-")) == ["rank-0", "rank-1"]
    assert outcome["message"].startswith("Rank 1 of 2 (the rank that failed first): ")
    assert "Run: out of memory" in outcome["message"]
    report = client.reports[-1]
    assert report["selectedRank"] == 1 and [row["rank"] for row in report["ranks"]] == [0, 1]
    assert [row["ending"] for row in report["ranks"]] == ["stopped", "oom"]
    hints = await _hints(client, script.as_uri())
    assert hints[2].startswith("1.00 GiB · 100%"), hints  # rank 1's shard, alive at its OOM
