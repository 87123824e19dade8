"""The LSP lifecycle over real stdio, where pygls 2.1 alone does otherwise: requests before
``initialize`` and after ``shutdown``, the exit code, unreadable params of VRAM Lens's own requests,
a huge document, the JSON the server writes, and the interpreter probe's process group."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import stat
import sys
import time
from pathlib import Path

import pytest

from test_lsp_stdio import RawServer
from vramlens.lsp.interpreter_health import probe
from vramlens.lsp.json_values import finite_json


@pytest.fixture
def raw(tmp_path):
    server = RawServer(tmp_path)
    yield server
    server.close()


def test_a_request_before_initialize_is_answered_server_not_initialized(raw):
    raw.request("early", "textDocument/hover", {"textDocument": {"uri": "file:///x.py"}, "position": {"line": 0, "character": 0}})
    assert raw.response("early")["error"]["code"] == -32002
    raw.initialize()  # and the server is still there to be initialised
    raw.request(2, "shutdown")
    assert "error" not in raw.response(2)


def test_requests_after_shutdown_are_invalid_and_exit_then_ends_with_0(raw):
    raw.initialize()
    raw.request(2, "shutdown")
    assert raw.response(2).get("result") is None
    for msg_id, method in enumerate(("textDocument/hover", "vramlens/lineAnnotations", "workspace/executeCommand"), 3):
        raw.request(msg_id, method, {})
        assert raw.response(msg_id)["error"]["code"] == -32600
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert raw.proc.wait(10) == 0


def test_exit_without_shutdown_ends_with_1(raw):
    raw.initialize()
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert raw.proc.wait(10) == 1


@pytest.mark.parametrize("params", [{"uri": 5}, {"uri": None}, [], {"uri": ["file:///x.py"]}, {}])
def test_bad_params_of_our_requests_are_invalid_params_in_one_sentence(raw, params):
    raw.initialize()
    raw.request(2, "vramlens/lineAnnotations", params)
    error = raw.response(2)["error"]
    assert error["code"] == -32602, error
    assert "\n" not in error["message"] and "Traceback" not in json.dumps(error) and error.get("data") is None


def test_a_50_mb_document_does_not_hold_up_the_next_request(raw, tmp_path):
    raw.initialize()
    text = "value = 1\n" * (5 << 20)
    raw.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": (tmp_path / "big.py").as_uri(), "languageId": "python", "version": 1, "text": text}}})
    sent = time.monotonic()
    raw.request(2, "vramlens/lineAnnotations", {"uri": (tmp_path / "big.py").as_uri()})
    raw.response(2)
    assert time.monotonic() - sent < 5  # reading 50 MB of JSON takes about a second; nothing more is done with it


def _random_json(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice([math.nan, math.inf, -math.inf, 1.5, -0.0, 10**30, "nan", None, True, 0])
    if roll < 0.7:
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {f"k{i}": _random_json(rng, depth + 1) for i in range(rng.randint(0, 4))}


def test_what_the_server_sends_is_valid_json_whatever_floats_it_holds():
    rng = random.Random(24)
    for _ in range(500):
        value = {"jsonrpc": "2.0", "id": 1, "result": _random_json(rng)}
        sent = finite_json(value, lambda item: item.__dict__)
        text = json.dumps(sent, allow_nan=False)  # raises on NaN or Infinity
        assert json.loads(text)["id"] == 1
        if not any(token in json.dumps(value) for token in ("NaN", "Infinity")):
            assert sent is value  # untouched when already valid


def test_the_interpreter_probe_leaves_no_process_behind(tmp_path):
    pids = tmp_path / "pids"
    stubborn = ("import os, signal, subprocess, sys, time\n"
                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "child = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
                "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)'])\n"
                f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
                "time.sleep(120)\n")
    (tmp_path / "stubborn.py").write_text(stubborn)
    interpreter = tmp_path / "python"  # what it is asked to run is ignored: it starts the stubborn pair
    interpreter.write_text(f"#!/bin/sh\nexec {sys.executable} {tmp_path / 'stubborn.py'}\n")
    interpreter.chmod(interpreter.stat().st_mode | stat.S_IEXEC)
    started = time.monotonic()
    facts = probe(str(interpreter), timeout_s=3)
    assert "did not answer within 3 s" in facts["runError"] and time.monotonic() - started < 10
    victims = [int(pid) for pid in pids.read_text().split()]
    time.sleep(0.5)
    alive = [pid for pid in victims if _running(pid)]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as status:
            return status.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# -- notebook sync -----------------------------------------------------------------------------------
import notebook_sync  # noqa: E402  (benchmarks/: its stdio client and its notebooks)


@pytest.fixture
def notebook_client(tmp_path):
    client = notebook_sync.Client(Path(__file__).resolve().parents[2] / "server", tmp_path)
    yield client
    client.close()


def test_an_edit_of_a_notebook_sends_the_edited_cell_and_only_the_cells_whose_diagnostics_changed(notebook_client, tmp_path):
    rng = random.Random(24)
    path = tmp_path / "train.ipynb"
    uris = notebook_sync.open_notebook(notebook_client, path, [notebook_sync.cell_text(i) for i in range(300)])
    notebook_client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uris[-1])
    with_findings = {m["params"]["uri"] for m in notebook_client.published_since(0) if m["params"]["diagnostics"]}
    assert with_findings  # the loops that keep their losses are found, across cells
    for version in range(2, 5):
        edited = rng.choice(uris)
        time.sleep(0.4)
        sent = time.monotonic()
        notebook_client.notify("notebookDocument/didChange", {
            "notebookDocument": {"uri": path.as_uri(), "version": version},
            "change": {"cells": {"textContent": [{"document": {"uri": edited, "version": version}, "changes": [
                {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "pass\n"}]}]}}})
        notebook_client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                             and m["params"]["uri"] == edited and m["params"].get("version") == version)
        time.sleep(0.5)
        sent_for = [m["params"]["uri"] for m in notebook_client.published_since(sent)]
        assert edited in sent_for and len(sent_for) <= 1 + len(with_findings), len(sent_for)  # not one per cell


def test_a_5_mb_cell_does_not_hold_up_the_server(notebook_client, tmp_path):
    big = "\n".join(f"row_{i} = [{i}, {i + 1}]" for i in range(250_000))
    notebook_sync.open_notebook(notebook_client, tmp_path / "data.ipynb", [notebook_sync.cell_text(0), big])
    sent = time.monotonic()
    notebook_client.request(9, "vramlens/lineAnnotations", {"uri": "file:///elsewhere.py"})
    assert notebook_client.wait(lambda m: m.get("id") == 9, timeout=30) - sent < 5
