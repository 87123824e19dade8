"""`vramlens.compareCaptures` over stdio: the loaded capture (after a fix) against the one before it, both real
H200 captures of one workload (tests/fixtures/realworld: Trainer.evaluate() gathering logits, then the same
evaluation with eval_accumulation_steps=1)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsp_helpers import REPO, execute
from pytest_lsp import LanguageClient

REALWORLD = REPO / "tests" / "fixtures" / "realworld"
BEFORE = REALWORLD / "hf_trainer_eval_gather" / "capture"
AFTER = REALWORLD / "hf_trainer_eval_accumulate" / "capture"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "workloads" / "hf_trainer", tmp_path / "hf_trainer")  # the recorded /workspace/hf_trainer
    return tmp_path


@pytest.mark.asyncio
async def test_compare_with_the_previous_run_says_what_the_change_did(client: LanguageClient, workspace: Path):
    loaded = await execute(client, "vramlens.openCapture", {"path": str(AFTER), "workspaceFolder": workspace.as_uri()})
    assert loaded["ok"] is True, loaded
    answer = await execute(client, "vramlens.compareCaptures", {"before": str(BEFORE), "workspaceFolder": workspace.as_uri()})
    assert answer["ok"] is True, answer
    diff = answer["diff"]
    assert (diff["before"]["outcome"], diff["after"]["outcome"]) == ("oom", "completed")
    assert diff["before"]["cause"] == "retained_references" and diff["after"]["growth"] < diff["before"]["growth"]
    assert answer["message"] == diff["sentence"] and "now completes" in answer["message"]
    assert "peak reserved" in answer["text"] and "evaluate_gather.py:85" in answer["text"]
    view = answer["view"]  # the report's side-by-side section, labelled: the view formats nothing
    assert view["title"] == "Before and after" and view["sentence"] == diff["sentence"]
    assert view["columns"] == ["", "before", "after", "change"]
    outcome, before, after, _ = view["rows"][0]
    assert outcome == "outcome" and before.startswith("oom") and after.startswith("completed")
    assert any(row["label"].startswith("evaluate_gather.py:85") for row in view["lines"])


@pytest.mark.asyncio
async def test_compare_without_a_capture_or_with_a_bad_one_is_one_sentence(client: LanguageClient, workspace: Path):
    nothing = await execute(client, "vramlens.compareCaptures", {"before": str(BEFORE)})
    assert nothing["ok"] is False and "No capture is loaded" in nothing["message"]
    assert (await execute(client, "vramlens.openCapture", {"path": str(AFTER)}))["ok"] is True
    missing = await execute(client, "vramlens.compareCaptures", {"before": str(workspace / "nowhere")})
    assert missing["ok"] is False and "\n" not in missing["message"]
    unnamed = await execute(client, "vramlens.compareCaptures", {})
    assert unnamed["ok"] is False and "before" in unnamed["message"]
