"""`vramlens.confirmDiagnosis` over stdio: refused when untrusted or with nothing loaded, and with
the stand-in torch of tests/agent_double the loaded diagnosis' experiment is run with the recorded
arguments and memory limit, the verdict lands in the capture and the report says it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from lsp_helpers import execute
from pytest_lsp import LanguageClient
from test_diagnose import DOUBLE, _script

GROW = (
    "import argparse, torch\n"
    "MiB = 1024 * 1024\n"
    "parser = argparse.ArgumentParser()\n"
    "parser.add_argument('--batch-size', type=int, default=8)\n"
    "args = parser.parse_args()\n"
    "fixed = torch.empty(64 * MiB)\n"
    "batch = torch.empty(args.batch_size * 10 * MiB)\n"
)


@pytest.mark.asyncio
async def test_untrusted_or_nothing_loaded_is_refused_without_running(client: LanguageClient, tmp_path: Path):
    uri = _script(tmp_path, "raise SystemExit('must not run')\n")
    outcome = await execute(client, "vramlens.confirmDiagnosis", {"uri": uri, "trusted": False})
    assert outcome["ok"] is False and "trusted workspace" in outcome["message"]
    outcome = await execute(client, "vramlens.confirmDiagnosis", {"uri": uri, "trusted": True})
    assert outcome["ok"] is False and outcome["message"].startswith("Diagnose the file or open its capture first")
    assert not (tmp_path / ".vramlens").exists()


@pytest.mark.asyncio
async def test_the_loaded_diagnosis_is_confirmed_by_measurement(client: LanguageClient, tmp_path: Path):
    uri = _script(tmp_path, GROW)
    run = {"uri": uri, "trusted": True, "interpreter": sys.executable, "env": {"PYTHONPATH": str(DOUBLE)},
           "memoryLimit": "1GiB", "args": ["--batch-size", "100"]}
    diagnosed = await execute(client, "vramlens.diagnose", run)
    assert diagnosed["ok"] is True, diagnosed
    assert client.reports[-1]["analysis"]["confirm"]["variants"] == [
        {"kind": "argument", "flag": "--batch-size", "value": "50"}]
    # The settings' arguments are ignored: the capture's own (--batch-size 100, 1GiB) are what is measured.
    outcome = await execute(client, "vramlens.confirmDiagnosis", {**run, "args": [], "memoryLimit": None})
    assert outcome["ok"] is True, outcome
    assert outcome["message"].startswith("Confirmed by measurement: with half the batch the run fitted")
    report = client.reports[-1]["analysis"]
    assert report["measured"].startswith("Confirmed by measurement") and report["confidence"] >= 0.9
    captures = list((tmp_path / ".vramlens" / "captures").iterdir())
    meta = json.loads(next(c for c in captures if not c.name.endswith("--confirm")).joinpath("capture.json").read_text())
    assert meta["confirmation"]["result"]["verdict"] == "confirmed"
