"""Notebook sync in the language server: how the time to check a notebook and the messages it sends
grow with its cells, over real stdio (`vramlens serve` in a child process).

    python benchmarks/notebook_sync.py [--cells 1000 10000 100000] [--server DIR]

For each size: a notebook of N code cells (a training loop's cells, each a few lines, one list filled
across cells so the checks follow values from cell to cell) is opened; then one cell is edited. Printed:
the seconds until every cell's diagnostics arrived after the open, the seconds from the edit until
its diagnostics arrived, and how many publishDiagnostics messages the edit caused. Last, a notebook
with one 5 MB cell: the seconds until the server answers the next request, and the server's peak
memory (VmHWM). Every figure comes from one run of this script, inputs made by it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Client:
    """`vramlens serve` over stdio; every message the server sends is kept with the time it arrived."""

    def __init__(self, server: Path, workspace: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "vramlens", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=workspace, env=dict(os.environ, PYTHONPATH=str(server)))
        self.messages: list[tuple[float, dict]] = []
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        uri = workspace.as_uri()
        # Preview checks on: the cells' leak (a list of losses, VL102) is one the held-out gate may leave in preview.
        self.request(1, "initialize", {"processId": None, "rootUri": uri, "capabilities": {},
                                       "workspaceFolders": [{"uri": uri, "name": "ws"}],
                                       "initializationOptions": {"lint": {"preview": True}}})
        self.wait(lambda m: m.get("id") == 1)
        self.notify("initialized", {})

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
            with self.arrived:
                self.messages.append((time.monotonic(), message))
                self.arrived.notify_all()

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def request(self, msg_id, method: str, params=None) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})

    def notify(self, method: str, params) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait(self, done, timeout: float = 900.0) -> float:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                for arrived, message in self.messages:
                    if done(message):
                        return arrived
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no answer")
                self.arrived.wait(left)

    def published_since(self, start: float) -> list[dict]:
        with self.arrived:
            return [m for t, m in self.messages if t >= start and m.get("method") == "textDocument/publishDiagnostics"]

    def peak_memory_mib(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024

    def close(self) -> None:
        self.request("end", "shutdown")
        try:
            self.wait(lambda m: m.get("id") == "end", timeout=60)
            self.notify("exit", None)
            self.proc.wait(10)
        except (TimeoutError, subprocess.TimeoutExpired):
            self.proc.kill()


def cell_text(number: int) -> str:
    if number == 0:
        return "import torch\nlosses = []\nmodel = torch.nn.Linear(8, 8)\ncriterion = torch.nn.MSELoss()"
    if number % 10 == 0:  # a loop that keeps every loss with its graph (a finding on this cell)
        return ("for x, y in loader:\n    loss = criterion(model(x), y)\n    loss.backward()\n"
                "    losses.append(loss)")
    return f"x{number} = torch.randn(4, 8)\ny{number} = model(x{number}).detach()\nprint(y{number}.shape)"


def open_notebook(client: Client, path: Path, texts: list[str]) -> list[str]:
    uris = [f"vscode-notebook-cell:{path}#W{i}sZmlsZQ" for i in range(len(texts))]
    client.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": path.as_uri(), "notebookType": "jupyter-notebook", "version": 1,
                             "cells": [{"kind": 2, "document": uri} for uri in uris]},
        "cellTextDocuments": [{"uri": uri, "languageId": "python", "version": 1, "text": text}
                              for uri, text in zip(uris, texts)]})
    return uris


def edit(client: Client, path: Path, uri: str, line: int) -> None:
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": path.as_uri(), "version": 2},
        "change": {"cells": {"textContent": [{"document": {"uri": uri, "version": 2}, "changes": [
            {"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}},
             "text": "scratch = torch.zeros(2)\n"}]}]}}})


def measure(server: Path, cells: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="vramlens-nbsync-") as scratch:
        workspace = Path(scratch)
        client = Client(server, workspace)
        path = workspace / "train.ipynb"
        texts = [cell_text(i) for i in range(cells)]
        sent = time.monotonic()
        uris = open_notebook(client, path, texts)
        last = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                           and m["params"]["uri"] == uris[-1])
        opened_s = last - sent
        time.sleep(0.5)
        middle = uris[cells // 2]
        sent = time.monotonic()
        edit(client, path, middle, 1)
        arrived = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                              and m["params"]["uri"] == middle and m["params"].get("version") == 2)
        time.sleep(1.0)  # anything else the edit causes
        messages = len(client.published_since(sent))
        memory = client.peak_memory_mib()
        client.close()
        return {"cells": cells, "open_s": opened_s, "edit_s": arrived - sent, "edit_messages": messages, "peak_mib": memory}


def huge_cell(server: Path, size: int = 5 << 20) -> dict:
    with tempfile.TemporaryDirectory(prefix="vramlens-nbsync-") as scratch:
        workspace = Path(scratch)
        client = Client(server, workspace)
        path = workspace / "data.ipynb"
        rows = "\n".join(f"row_{i} = [{i}, {i + 1}, {i + 2}]" for i in range(size // 24))
        texts = [cell_text(0), rows[:size], cell_text(1)]
        sent = time.monotonic()
        open_notebook(client, path, texts)
        client.request(7, "vramlens/lineAnnotations", {"uri": "file:///elsewhere.py"})
        answered = client.wait(lambda m: m.get("id") == 7)
        memory = client.peak_memory_mib()
        client.close()
        return {"answer_s": answered - sent, "peak_mib": memory, "bytes": len(texts[1])}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", nargs="*", type=int, default=[1000, 10000, 100000])
    parser.add_argument("--server", type=Path, default=ROOT / "server")
    args = parser.parse_args()
    server = args.server.resolve()
    print(f"checkout: {server}; python {sys.version.split()[0]}\n")
    print("| code cells | open: all diagnostics in | one edit: its diagnostics in | messages the edit caused | server peak memory |")
    print("|---:|---:|---:|---:|---:|")
    for cells in args.cells:
        row = measure(server, cells)
        print(f"| {row['cells']:,} | {row['open_s']:.2f} s | {row['edit_s']:.2f} s | {row['edit_messages']} | "
              f"{row['peak_mib']:.0f} MiB |", flush=True)
    big = huge_cell(server)
    print(f"\nA notebook with one {big['bytes'] / 2**20:.1f} MiB cell: the next request answered after {big['answer_s']:.2f} s; "
          f"server peak memory {big['peak_mib']:.0f} MiB.")


if __name__ == "__main__":
    main()
