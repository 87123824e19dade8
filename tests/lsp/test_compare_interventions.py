"""`vramlens.compareInterventions` over stdio: refused when untrusted, one sentence without CUDA
(the real CPU torch here), progress and cancellation with the stand-in torch of
tests/agent_double; and a committed experiment (tests/fixtures/experiments, measured on an H200)
opened with `vramlens.openCapture` arrives whole in the report."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from lsp_helpers import REPO, execute
from process_helpers import running
from pytest_lsp import LanguageClient
from test_diagnose import DOUBLE, HANG, _progress_messages, _script

from vramlens.experiments.engine import CANCELLED

EXPERIMENTS = REPO / "tests" / "fixtures" / "experiments"


def _compare_params(uri: str, **extra) -> types.ExecuteCommandParams:
    argument = {"uri": uri, "trusted": True, "variants": ["expandable_segments:True"], "repeats": 1, **extra}
    return types.ExecuteCommandParams(command="vramlens.compareInterventions", arguments=[argument])


@pytest.mark.asyncio
async def test_untrusted_workspace_is_refused(client: LanguageClient, tmp_path: Path):
    uri = _script(tmp_path, "raise SystemExit('must not run')\n")
    outcome = await execute(client, "vramlens.compareInterventions",
                            {"uri": uri, "trusted": False, "variants": ["expandable_segments:True"]})
    assert outcome["ok"] is False and "trusted workspace" in outcome["message"]
    assert client.progress_reports == {} and not (tmp_path / ".vramlens").exists()


@pytest.mark.asyncio
async def test_a_variant_that_is_none_is_named(client: LanguageClient, tmp_path: Path):
    uri = _script(tmp_path, "raise SystemExit('must not run')\n")
    outcome = await client.workspace_execute_command_async(_compare_params(uri, variants=["fast_mode:on"]))
    assert outcome["ok"] is False
    assert outcome["message"].startswith("'fast_mode:on' is not a variant: write an allocator setting")


@pytest.mark.asyncio
async def test_without_cuda_the_command_fails_with_one_clear_sentence(client: LanguageClient, tmp_path: Path):
    pytest.importorskip("torch")  # the real CPU build: torch.cuda.is_available() is False
    uri = _script(tmp_path, "import torch\nx = torch.ones(1, device='cuda')\n")
    outcome = await client.workspace_execute_command_async(_compare_params(uri, interpreter=sys.executable))
    assert outcome["ok"] is False
    assert outcome["message"].startswith(f"CUDA is not available in {sys.executable}")
    assert "\n" not in outcome["message"]
    (values,) = client.progress_reports.values()
    assert values[0].kind == "begin" and values[0].cancellable is True
    assert values[-1].kind == "end" and values[-1].message == outcome["message"]


@pytest.mark.asyncio
async def test_progress_names_each_run_and_cancel_ends_the_process_tree(client: LanguageClient, tmp_path: Path):
    uri = _script(tmp_path, HANG)
    command = asyncio.ensure_future(client.protocol.send_request_async(
        types.WORKSPACE_EXECUTE_COMMAND,
        _compare_params(uri, repeats=2, interpreter=sys.executable, env={"PYTHONPATH": str(DOUBLE)}), msg_id="compare-1"))
    token, values = await _progress_messages(client, "Run 1/4: baseline (repeat 1/2) · Running: 192.00 MiB allocated")
    grandchild = int((tmp_path / "grandchild.pid").read_text())
    assert running(grandchild)
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    outcome = await asyncio.wait_for(command, 60)
    time.sleep(0.3)
    assert not running(grandchild), "the script's process tree outlived the cancellation"
    assert outcome["ok"] is True and outcome["message"].startswith(CANCELLED), outcome
    assert values[-1].kind == "end" and values[-1].message == outcome["message"]
    experiment = client.reports[-1]["experiment"]
    assert experiment["stopped"] == CANCELLED
    written = Path(experiment["output_dir"])
    assert written.parent == tmp_path / ".vramlens" / "experiments"
    assert json.loads((written / "experiment.json").read_text())["stopped"] == CANCELLED


@pytest.mark.asyncio
@pytest.mark.parametrize("name", ["fragmentation", "checkerboard", "batch_size"])
async def test_a_committed_experiment_opens_into_the_report(client: LanguageClient, tmp_path: Path, name: str):
    folder = tmp_path / "runs" / name
    folder.mkdir(parents=True)
    shutil.copy(EXPERIMENTS / f"{name}.json", folder / "experiment.json")
    recorded = json.loads((EXPERIMENTS / f"{name}.json").read_text())
    for path in (folder, folder / "experiment.json"):
        outcome = await execute(client, "vramlens.openCapture", {"path": str(path)})
        assert outcome["ok"] is True, outcome
        assert outcome["message"].startswith(f"Experiment on {Path(recorded['script']).name}: {len(recorded['variants'])} variant")
        report = client.reports[-1]
        assert report["experiment"] == recorded
        assert report["analysis"] is None and report["series"] is None and report["lines"] == []
        assert report["capture"] == str((folder / "experiment.json").resolve())
        assert "```text\nVRAM Lens experiment" in report["markdown"]
    assert (await execute(client, "vramlens.showReport", {}))["ok"] is True
    assert client.reports[-1]["experiment"] == recorded


@pytest.mark.asyncio
async def test_a_json_that_is_no_experiment_is_named(client: LanguageClient, tmp_path: Path):
    other = tmp_path / "settings.json"
    other.write_text('{"a": 1}')
    outcome = await execute(client, "vramlens.openCapture", {"path": str(other)})
    assert outcome["ok"] is False
    assert outcome["message"] == (f"{other} is neither a capture nor a VRAM Lens experiment "
                                  "(the experiment.json `vramlens experiment` writes).")
