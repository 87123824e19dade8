"""The language server over REAL stdio (a subprocess, raw bytes): bad framing, unreadable requests,
and loads that must not hold up the protocol.

pytest-lsp's client only ever sends well-formed messages; these tests write the bytes themselves.
"""

import json
import os
import pickle
import queue
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import corpus
from analysis_synthetic import build_snapshot  # benchmarks/: a large valid snapshot, built in seconds

ROOT = Path(__file__).resolve().parents[2]

TIMEOUT = 20


class RawServer:
    """`vramlens serve` with its stdin and stdout as bytes; responses collected by id."""

    def __init__(self, workspace: Path, server_path: Path = ROOT / "server"):
        self.proc = subprocess.Popen([sys.executable, "-m", "vramlens", "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=workspace,
                                     env=dict(os.environ, PYTHONPATH=str(server_path)))
        self.responses: dict = {}
        self.arrived = threading.Condition()
        self.stderr: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        self.workspace = workspace

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line == b"\r\n":
                    break
            message = json.loads(out.read(length))
            if "id" in message and "method" not in message:
                with self.arrived:
                    self.responses[message["id"]] = (time.monotonic(), message)
                    self.arrived.notify_all()

    def send_raw(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, msg_id, method: str, params=None) -> None:
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def response(self, msg_id, timeout: float = TIMEOUT) -> dict:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while msg_id not in self.responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"no response to {msg_id!r}; server stderr:\n"
                                         + b"".join(self.stderr).decode(errors="replace")[-3000:])
                self.arrived.wait(left)
            return self.responses[msg_id][1]

    def answered_at(self, msg_id) -> float:
        return self.responses[msg_id][0]

    def initialize(self) -> None:
        uri = self.workspace.as_uri()
        self.request(1, "initialize", {"processId": None, "rootUri": uri, "capabilities": {},
                                       "workspaceFolders": [{"uri": uri, "name": "ws"}]})
        assert "result" in self.response(1)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def server(tmp_path):
    raw = RawServer(tmp_path)
    raw.initialize()
    yield raw
    raw.close()


def clear_capture(server: RawServer, msg_id) -> dict:
    server.request(msg_id, "workspace/executeCommand", {"command": "vramlens.clearCapture", "arguments": [{}]})
    return server.response(msg_id)


BAD_FRAMES = {
    "Content-Length abc": b"Content-Length: abc\r\n\r\n{\"jsonrpc\": \"2.0\", \"id\": 900, \"method\": \"shutdown\"}",
    "Content-Length -5": b"Content-Length: -5\r\n\r\n{}",
    "Content-Length too small": b"Content-Length: 12\r\n\r\n{\"jsonrpc\": \"2.0\", \"id\": 901, \"method\": \"shutdown\"}",
    "Content-Length too large": b"Content-Length: 900\r\n\r\n{\"jsonrpc\": \"2.0\", \"id\": 902, \"method\": \"shutdown\"}",
    "64 KB of random bytes": random.Random(16).randbytes(64 * 1024),
    "a header that never ends": b"Content-Length: 40\r\nX-Junk: " + b"y" * 10_000,
    "a body that is not JSON": b"Content-Length: 10\r\n\r\nnot json!!",
}


@pytest.mark.parametrize("name", list(BAD_FRAMES))
def test_the_server_finds_its_place_again_after_bad_framing(server, name):
    server.send_raw(BAD_FRAMES[name])
    assert clear_capture(server, 2)["result"]["ok"] is True  # the next valid message is answered
    assert clear_capture(server, 3)["result"]["ok"] is True
    server.request(4, "shutdown")
    assert server.response(4)["result"] is None
    server.send({"jsonrpc": "2.0", "method": "exit"})
    assert server.proc.wait(timeout=TIMEOUT) == 0


@pytest.mark.parametrize("method, params", [
    ("textDocument/hover", []),
    ("textDocument/hover", None),
    ("textDocument/inlayHint", {"textDocument": {"uri": "file:///nowhere/x.py"},
                                "range": {"start": {"line": -5, "character": 0}, "end": {"line": 3, "character": 0}}}),
    ("textDocument/codeAction", {"textDocument": {"uri": 5}, "range": "everything", "context": {}}),
    ("workspace/executeCommand", {"command": 12, "arguments": "x"}),
])
def test_every_request_gets_a_result_or_an_error(server, method, params):
    server.request(2, method, params)
    answer = server.response(2)
    assert "result" in answer or answer["error"]["code"] in (-32602, -32600, -32603, -32601)
    assert clear_capture(server, 3)["result"]["ok"] is True  # and the server goes on


def test_a_message_without_jsonrpc_is_answered_invalid_request(server):
    server.send({"id": 2, "method": "shutdown"})
    assert server.response(2)["error"]["code"] == -32600


def workers_of(pid: int) -> list[int]:
    """The load workers the server ``pid`` has running."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"vramlens.lsp.load_worker" in cmdline:
                found.append(int(entry.name))
    return found


def answered_or_cancelled(answer: dict) -> bool:
    return ("result" in answer and bool(answer["result"]["message"])) or answer.get("error", {}).get("code") == -32800


def _open(server: RawServer, msg_id, path: Path) -> None:
    server.request(msg_id, "workspace/executeCommand", {"command": "vramlens.openCapture",
                                                        "arguments": [{"path": str(path)}]})


@pytest.mark.parametrize("bomb", ["x = [x, x] thirty times (431 bytes)", "one 100,000-frame stack shared by 5,000 entries",
                                  "LONG_BINPUT at 2**29"])
def test_open_capture_on_a_bomb_is_one_sentence_and_shutdown_is_answered(server, tmp_path, bomb):
    built = {**corpus.shape_inputs(tmp_path), **corpus.opcode_inputs(tmp_path)}
    _open(server, 2, built[bomb])
    server.request(3, "shutdown")
    assert server.response(3)["result"] is None
    assert answered_or_cancelled(server.response(2))  # loaded, refused in a sentence, or cancelled by the shutdown


def test_a_slow_load_never_holds_up_the_protocol_and_shutdown_cancels_it(server, tmp_path):
    big = tmp_path / "big.pickle"
    big.write_bytes(pickle.dumps(build_snapshot(600_000), protocol=4))
    _open(server, 2, big)
    time.sleep(0.5)  # the worker is unpickling now
    sent = time.monotonic()
    assert clear_capture(server, 3)["result"]["ok"] is True
    server.request(4, "shutdown")
    assert server.response(4)["result"] is None
    assert server.answered_at(4) - sent < 3, "shutdown waited for the load"
    assert answered_or_cancelled(server.response(2))
    deadline = time.monotonic() + 5
    while workers_of(server.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not workers_of(server.proc.pid), "the load worker outlived the shutdown"


def test_a_cancelled_load_answers_and_ends_its_worker(server, tmp_path):
    big = tmp_path / "big.pickle"
    big.write_bytes(pickle.dumps(build_snapshot(600_000), protocol=4))
    _open(server, 2, big)
    time.sleep(0.5)
    assert workers_of(server.proc.pid), "the load runs in a worker process"
    server.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}})
    opened = server.response(2)
    assert answered_or_cancelled(opened)
    if "result" in opened:
        assert opened["result"]["ok"] is False and "cancelled" in opened["result"]["message"]
    deadline = time.monotonic() + 5
    while workers_of(server.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not workers_of(server.proc.pid)
    assert clear_capture(server, 3)["result"]["ok"] is True
