"""What the editor shows beside the figures, through the real server: the interpreter's health, the
report's links, actions and timeline extras, a capture whose files are elsewhere, and the one-line
messages (cause first, in words)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from lsp_helpers import CAPTURES, REPO, execute, open_document, plain
from pytest_lsp import LanguageClient

RETAINED = CAPTURES / "retained_references"


@pytest.mark.asyncio
async def test_interpreter_health_names_the_problem_with_the_remedy_first(client: LanguageClient, workspace: Path):
    answer = plain(await client.protocol.send_request_async("vramlens/interpreterHealth", {}))
    assert answer["python"] == sys.executable
    # The test interpreter has the CPU build of torch: it can lint and open captures, not diagnose.
    assert answer["ok"] is False and answer["canRun"] is False
    assert answer["torch"] and answer["summary"] == f"torch {answer['torch']} · no CUDA"
    assert answer["problem"].startswith("Choose an interpreter whose torch sees a GPU to diagnose runs")
    assert "a build without CUDA" in answer["problem"]


@pytest.mark.asyncio
async def test_interpreter_without_torch_or_missing_is_named(client: LanguageClient, workspace: Path, tmp_path: Path):
    from vramlens.lsp.interpreter_health import health, probe

    missing = health(str(tmp_path / "no-python"), probe(str(tmp_path / "no-python")))
    assert missing["ok"] is False and missing["problem"].startswith("Choose a Python 3.10+ with torch")
    assert "was not found" in missing["problem"]
    bare = health(sys.executable, probe(sys.executable, 30) | {"torch": None, "torchError": "ModuleNotFoundError: No module named 'torch'"})
    assert bare["problem"].startswith("Choose an interpreter that has torch")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    return tmp_path


@pytest.mark.asyncio
async def test_message_says_the_cause_in_words_then_the_top_line_then_the_run(client: LanguageClient, workspace: Path):
    outcome = await execute(client, "vramlens.openCapture", {"path": str(RETAINED)})
    assert outcome["message"] == ("Tensors from earlier iterations stay referenced (high confidence). "
                                  "Top line retained_references.py:20. Run: out of memory (request 64.00 MiB).")


@pytest.mark.asyncio
async def test_report_links_every_attributed_line_and_carries_the_timeline_extras(client: LanguageClient, workspace: Path):
    await execute(client, "vramlens.openCapture", {"path": str(RETAINED)})
    report = client.reports[-1]
    script = (workspace / "scenarios" / "retained_references.py").as_uri()
    links = {link["label"]: link for link in report["links"]}
    assert links["retained_references.py:20"] == {"label": "retained_references.py:20", "uri": script, "line": 19}
    assert set(links) == {"retained_references.py:20", "retained_references.py:19", "retained_references.py:12",
                          "retained_references.py:21"}  # the line that keeps the memory, though it allocated nothing
    # Every file:line the advice names is one the view can link.
    named = {token for r in report["recommendations"] for token in r["action"].split() if ".py:" in token}
    assert named and {token.strip("(),.") for token in named} <= set(links)
    assert all(r["actions"] == [] or all("kind" in a for a in r["actions"]) for r in report["recommendations"])
    assert report["diagnosis"]["causeText"] == "tensors from earlier iterations stay referenced"
    series = report["series"]
    assert series["limit"] == report["analysis"]["memory"]["limit"] and series["limitIsCap"] is True
    # One device total: the accounting's (torch's), which the CLI and the report print too.
    assert series["deviceTotal"] == report["analysis"]["memory"]["device_total"]
    # The top line at each point: at the OOM, the line that holds most then.
    assert len(series["tops"]) == len(series["allocated"])
    assert series["tops"][-1] == ["retained_references.py:20", 2819620864]
    assert report["unmapped"] is None and report["confirmable"] is True


@pytest.mark.asyncio
async def test_the_series_the_view_tests_use_is_what_the_server_sends(client: LanguageClient, workspace: Path):
    """extension/test/timeline.test.ts draws tests/fixtures/editor/retained_references.series.json: it must not drift."""
    import json

    await execute(client, "vramlens.openCapture", {"path": str(RETAINED)})
    committed = json.loads((REPO / "tests" / "fixtures" / "editor" / "retained_references.series.json").read_text())
    assert client.reports[-1]["series"] == committed


def test_the_probe_sees_the_environment_a_run_gets():
    """The `env` setting reaches the script: the probe runs with it too (here: the stand-in torch's pretend GPU)."""
    from vramlens.lsp.interpreter_health import health, probe

    double = str(REPO / "tests" / "agent_double")
    answer = health(sys.executable, probe(sys.executable, 60, {"PYTHONPATH": double}))
    assert answer["cuda"] is True and answer["ok"] is True, answer
    assert answer["summary"].startswith(f"torch {answer['torch']} · CUDA ")


def test_call_path_frames_of_files_and_of_notebook_cells():
    from vramlens.lsp.annotations import call_path_markdown
    from vramlens.lsp.frame_links import split_frame

    assert split_frame("torch/nn/modules/linear.py:134 forward") == ("torch/nn/modules/linear.py", 134, "forward")
    assert split_frame("train.ipynb cell 4 line 7 step") == ("train.ipynb cell 4 line 7", 7, "step")
    path = ["train.py:20 evaluate", "torch/nn/modules/module.py:1779 _wrapped_call_impl",
            "transformers/models/gpt2/modeling_gpt2.py:300 forward", "torch/nn/functional.py:2000 linear"]
    links = {"train.py:20 evaluate": "file:///ws/train.py#L20"}
    assert call_path_markdown(path, links.get) == (
        "[train.py:20](file:///ws/train.py#L20) `evaluate` › +1 torch frame › `modeling_gpt2.py:300` `forward` › "
        "`functional.py:2000` `linear`")
    assert call_path_markdown(["train.ipynb cell 4 line 7 step"], lambda frame: None, "train.ipynb cell 4 line 7") == (
        "`train.ipynb cell 4 line 7` `step`")


@pytest.mark.asyncio
async def test_live_at_an_instant_and_the_memory_viz_views_through_the_server(client: LanguageClient, workspace: Path):
    """A click on the timeline asks what was live then: the server replays the capture to that trace position."""
    await execute(client, "vramlens.openCapture", {"path": str(RETAINED)})
    report = client.reports[-1]
    series = report["series"]
    assert len(series["pointIndex"]) == len(series["allocated"])
    at_oom = series["pointIndex"][-1]
    answer = await execute(client, "vramlens.liveAt", {"index": at_oom})
    assert answer["ok"], answer
    groups = answer["liveAt"]["groups"]
    assert groups and [g["bytes"] for g in groups] == sorted((g["bytes"] for g in groups), reverse=True)
    assert any("retained_references.py:20" in frame for frame in groups[0]["frames"])  # the top line's stack
    early = await execute(client, "vramlens.liveAt", {"index": series["pointIndex"][1]})
    assert early["liveAt"]["total"] < answer["liveAt"]["total"]
    refused = await execute(client, "vramlens.liveAt", {"index": "last"})
    assert refused["ok"] is False and "index" in refused["message"]
    # The segment map and the snapshot PyTorch's viewer opens come with the report.
    assert report["segments"]["rows"] and report["segments"]["title"].startswith("Segments")
    assert report["snapshotFile"].endswith("snapshot.pickle")
