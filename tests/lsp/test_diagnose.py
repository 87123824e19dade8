"""`vramlens.diagnose` over stdio: refused when untrusted, one sentence without CUDA (the real CPU
torch in this interpreter), and — with the stand-in torch of tests/agent_double, which pretends a
CUDA device — progress through its phases with live figures, and cancellation that ends the
script's whole process tree and keeps, analyses and loads what was recorded."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from lsp_helpers import REPO, execute
from process_helpers import running
from pytest_lsp import LanguageClient

DOUBLE = REPO / "tests" / "agent_double"
HANG = """\
import subprocess, sys, time
import torch

def warm_up():
    return [torch.empty(64 * 2**20, device="cuda") for _ in range(3)]

kept = warm_up()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open("grandchild.pid", "w").write(str(child.pid))
print("started", flush=True)
while True:
    time.sleep(0.05)
"""


def _script(folder: Path, text: str, name: str = "train.py") -> str:
    path = folder / name
    path.write_text(text)
    return path.as_uri()


def _diagnose_params(uri: str, **extra) -> types.ExecuteCommandParams:
    return types.ExecuteCommandParams(command="vramlens.diagnose", arguments=[{"uri": uri, "trusted": True, **extra}])


async def _progress_messages(client: LanguageClient, wanted: str, timeout: float = 60) -> tuple[str, list]:
    """Wait for a progress report starting with ``wanted``; return its token and the messages so far."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for token, values in client.progress_reports.items():
            if any(getattr(v, "message", None) and v.message.startswith(wanted) for v in values):
                return token, values
        await asyncio.sleep(0.1)
    raise AssertionError(f"no progress report {wanted!r}: {client.progress_reports}")


@pytest.mark.asyncio
async def test_an_interpreter_that_cannot_start_is_named_with_its_setting(client: LanguageClient, tmp_path: Path):
    uri = _script(tmp_path, "print('never')\n")
    outcome = await execute(client, "vramlens.diagnose", {"uri": uri, "trusted": True, "interpreter": str(tmp_path / "no-python")})
    assert outcome["ok"] is False
    assert outcome["message"] == (f"Cannot start the interpreter {tmp_path / 'no-python'} (No such file or directory); "
                                  "check the vramlens.interpreter setting.")


@pytest.mark.asyncio
async def test_untrusted_workspace_is_refused(client: LanguageClient, tmp_path: Path):
    uri = _script(tmp_path, "raise SystemExit('must not run')\n")
    outcome = await execute(client, "vramlens.diagnose", {"uri": uri, "trusted": False})
    assert outcome["ok"] is False and "trusted workspace" in outcome["message"]
    assert client.progress_reports == {}


@pytest.mark.asyncio
async def test_without_cuda_the_command_fails_with_one_clear_sentence(client: LanguageClient, tmp_path: Path):
    pytest.importorskip("torch")  # the real CPU build: torch.cuda.is_available() is False
    uri = _script(tmp_path, "import torch\nx = torch.ones(1, device='cuda')\n")
    outcome = await client.workspace_execute_command_async(_diagnose_params(uri, interpreter=sys.executable))
    assert outcome["ok"] is False
    assert outcome["message"].startswith(f"CUDA is not available in {sys.executable}")
    assert "run on a machine with an NVIDIA GPU" in outcome["message"] and "\n" not in outcome["message"]
    (values,) = client.progress_reports.values()
    assert values[0].kind == "begin" and values[0].cancellable is True
    assert values[1].message == "Starting train.py"
    assert values[-1].kind == "end" and values[-1].message == outcome["message"]
    assert await execute(client, "vramlens.showReport", {}) == {
        "ok": False, "message": "No capture is loaded: run “Diagnose CUDA memory” or open a capture first.",
        "capture": None, "workspaceFolder": None}


async def _cancelled_run(client: LanguageClient, tmp_path: Path, cancel) -> dict:
    uri = _script(tmp_path, HANG)
    command = asyncio.ensure_future(client.protocol.send_request_async(
        types.WORKSPACE_EXECUTE_COMMAND, _diagnose_params(uri, interpreter=sys.executable, env={"PYTHONPATH": str(DOUBLE)}),
        msg_id="diagnose-1"))
    token, values = await _progress_messages(client, "Running: 192.00 MiB allocated · 192.00 MiB reserved")
    assert values[1].message == "Starting train.py"
    assert all(v.message.startswith("Running: ") for v in values[2:])  # live figures from the running script
    grandchild = int((tmp_path / "grandchild.pid").read_text())
    assert running(grandchild)
    cancel(token)
    outcome = await asyncio.wait_for(command, 60)
    time.sleep(0.3)
    assert not running(grandchild), "the script's process tree outlived the cancellation"
    assert any(getattr(v, "message", None) == "Analysing the capture" for v in values)
    assert values[-1].kind == "end" and values[-1].message == outcome["message"]
    return outcome


@pytest.mark.asyncio
async def test_progress_cancel_ends_the_process_tree_and_loads_what_was_recorded(client: LanguageClient, tmp_path: Path):
    def cancel(token):
        client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))

    outcome = await _cancelled_run(client, tmp_path, cancel)
    assert outcome["ok"] is True, outcome
    assert outcome["message"].startswith("The run was cancelled; what it recorded is kept and analysed.")
    capture = Path(outcome["capture"])
    assert capture.parent == tmp_path / ".vramlens" / "captures" and (capture / "snapshot.pickle").is_file()
    assert client.reports[-1]["analysis"]["status"] == "cancelled"
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=(tmp_path / "train.py").as_uri()),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=20, character=0))))
    assert [(hint.position.line, hint.label.split(" · ")[0]) for hint in hints] == [(4, "192.00 MiB")]


@pytest.mark.asyncio
async def test_cancel_request_ends_the_run_and_answers_with_the_result(client: LanguageClient, tmp_path: Path):
    def cancel(token):
        client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="diagnose-1"))

    outcome = await _cancelled_run(client, tmp_path, cancel)
    assert outcome["ok"] is True and outcome["message"].startswith("The run was cancelled")


@pytest.mark.asyncio
async def test_processes_per_node_beyond_any_machine_is_refused_before_anything_runs(client: LanguageClient, tmp_path: Path):
    marker = tmp_path / "ran"
    uri = _script(tmp_path, f"open({str(marker)!r}, 'w').write('ran')\n")
    outcome = await execute(client, "vramlens.diagnose", {"uri": uri, "trusted": True, "processesPerNode": 10**12})
    assert outcome["ok"] is False
    assert outcome["message"].startswith("processesPerNode must be a whole number from 0 to 64, not 1000000000000")
    assert not marker.exists()
