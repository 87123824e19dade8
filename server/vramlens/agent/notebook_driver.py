"""Run a notebook cell by cell in a fresh kernel of this interpreter, recorded from its first cell.

Started by the runner in the user's interpreter (``notebook_launch.py``); this process is the
kernel's parent, as a Jupyter front end would be. It starts ``ipykernel`` with a connection file
of its own, starts recording in the kernel with one silent execution, then sends each code cell as
an ``execute_request`` carrying the cell's id and place, stopping at the first failing cell as
"Run All" does. The kernel writes the capture (at an OOM, and at the end when told); this process
only reports progress, relays the cells' output, and answers SIGINT / SIGTERM by interrupting the
kernel and having it write what it recorded. Needs ipykernel (and so jupyter_client) there.
"""

from __future__ import annotations

import argparse
import os
import queue
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from .capture_writer import write_json_atomically
from .cells import INDEX_KEY
from .notebook_file import NotebookError, read_notebook
from .recording_args import recording_parser
from .runner_link import ENV_VAR as LINK_ENV_VAR

EXIT_PREFLIGHT = 2
STARTUP_S = 60.0  # for the kernel to answer its first request
INTERRUPT_WAIT_S = 8.0  # after SIGINT, for the running cell to end
FINISH_WAIT_S = 15.0  # for the kernel to write its capture
ON_DEMAND_WAIT_S = 3.0  # at a stop request, for the on-demand capture taken before the interrupt
_ENTRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_entry.py")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_EXIT_CODES = {"completed": 0, "oom": 1, "error": 1, "interrupted": 130, "terminated": 143}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = recording_parser("vramlens-notebook")
    parser.add_argument("--progress-file")
    parser.add_argument("notebook")
    parser.add_argument("args", nargs=argparse.REMAINDER)  # a notebook takes none; kept for the runner's shape
    return parser.parse_args(argv)


def missing_kernel_sentence() -> str | None:
    import importlib.util

    for module in ("ipykernel", "jupyter_client"):
        if importlib.util.find_spec(module) is None:
            return (f"{sys.executable} has no {module}, which running a notebook needs: install it there with "
                    f"`{sys.executable} -m pip install ipykernel` (or choose an interpreter that has it).")
    return None


class Kernel:
    """An ipykernel process of this interpreter and a blocking client on it."""

    def __init__(self):
        from jupyter_client.blocking import BlockingKernelClient
        from jupyter_client.connect import write_connection_file

        self.capture_dir: str | None = None  # where the kernel writes its capture, once recording is set up
        self.folder = tempfile.mkdtemp(prefix="vramlens-kernel-")
        self.connection_file = os.path.join(self.folder, "kernel.json")
        # Sockets in our private folder (no TCP port open to anyone), signed with a fresh key.
        write_connection_file(self.connection_file, transport="ipc", ip=os.path.join(self.folder, "kernel"),
                              key=secrets.token_hex(16).encode())
        link = os.environ.get(LINK_ENV_VAR, "")
        passed = tuple(int(fd) for fd in link.split(",") if fd.isdigit())
        # The kernel ends itself should we die (it watches its parent), as under any Jupyter front end.
        env = dict(os.environ, JPY_PARENT_PID=str(os.getpid()))
        # The runner's pipe goes on to the kernel, which asks for NVML samples at its OOM.
        self.process = subprocess.Popen([sys.executable, "-m", "ipykernel_launcher", "-f", self.connection_file],
                                        stdin=subprocess.DEVNULL, pass_fds=passed, env=env)
        self.client = BlockingKernelClient(connection_file=self.connection_file)
        self.client.load_connection_file()
        self.client.start_channels()

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_ready(self) -> str | None:
        """Until the kernel answers kernel_info. Its process is watched, not the heartbeat, which says
        "dead" for a kernel that is only slow to start (a busy machine, a large import)."""
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if not self.alive():
                return f"The kernel exited at start (exit code {self.process.returncode})."
            msg_id = self.client.kernel_info()
            try:
                while True:
                    reply = self.client.get_shell_msg(timeout=1.0)
                    if reply.get("parent_header", {}).get("msg_id") == msg_id:
                        self._drain_iopub()
                        return None
            except queue.Empty:
                continue
        return f"The kernel did not answer within {STARTUP_S:.0f} s of starting."

    def _drain_iopub(self) -> None:
        try:
            while True:
                self.client.get_iopub_msg(timeout=0.2)
        except queue.Empty:
            pass

    def send(self, code: str, silent: bool = False, metadata: dict | None = None) -> str:
        content = {"code": code, "silent": silent, "store_history": not silent, "user_expressions": {},
                   "allow_stdin": False, "stop_on_error": True}
        message = self.client.session.msg("execute_request", content, metadata=metadata or {})
        self.client.shell_channel.send(message)
        return message["header"]["msg_id"]

    def reply_to(self, msg_id: str, on_output, timeout_s: float | None = None, should_stop=None) -> dict | None:
        """The execute_reply's content once the kernel is idle again; None when the kernel died or the wait
        ran out. ``should_stop()`` is asked while waiting; the first True interrupts the running cell."""
        deadline = time.monotonic() + timeout_s if timeout_s else None
        reply = None
        interrupted_at = None
        while True:
            self._relay(msg_id, on_output)
            if reply is None:
                try:
                    message = self.client.get_shell_msg(timeout=0.1)
                    if message.get("parent_header", {}).get("msg_id") == msg_id:
                        reply = message["content"]
                except queue.Empty:
                    pass
            if reply is not None:
                self._relay(msg_id, on_output, until_idle=True)
                return reply
            if not self.alive():
                return None
            now = time.monotonic()
            if should_stop is not None and interrupted_at is None and should_stop():
                self.capture_first()  # the cell may ignore SIGINT: what it recorded so far is kept either way
                self.interrupt()
                interrupted_at = now
                deadline = now + INTERRUPT_WAIT_S
            if deadline is not None and now > deadline:
                return None

    def _relay(self, msg_id: str, on_output, until_idle: bool = False) -> bool:
        """Pass the cell's output on; with ``until_idle``, wait (briefly) for the kernel's idle status."""
        limit = time.monotonic() + (2.0 if until_idle else 0.0)
        while True:
            try:
                message = self.client.get_iopub_msg(timeout=0.05 if until_idle else 0.01)
            except queue.Empty:
                if time.monotonic() >= limit:
                    return False
                continue
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "status" and message["content"].get("execution_state") == "idle":
                return True
            on_output(message)

    def capture_first(self, wait_s: float = ON_DEMAND_WAIT_S) -> None:
        """An on-demand capture (SIGUSR1: the recorder's own handler), waited for briefly, before the
        cell is interrupted; the kernel's final capture replaces it when the cell does end."""
        meta = os.path.join(self.capture_dir, "capture.json") if self.capture_dir else None
        if meta is None:
            return
        before = os.stat(meta).st_mtime_ns if os.path.exists(meta) else None
        try:
            os.kill(self.pid, signal.SIGUSR1)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and self.alive():
            if os.path.exists(meta) and os.stat(meta).st_mtime_ns != before:
                return
            time.sleep(0.05)

    def interrupt(self) -> None:
        try:
            os.kill(self.pid, signal.SIGINT)
        except ProcessLookupError:
            pass

    def shutdown(self) -> None:
        try:
            self.client.shutdown()
            self.process.wait(timeout=5)
        except Exception:
            self.process.kill()
            try:
                self.process.wait(timeout=5)
            except Exception:
                pass
        finally:
            try:
                self.client.stop_channels()
            except Exception:
                pass
            shutil.rmtree(self.folder, ignore_errors=True)


def print_output(message: dict) -> None:
    """A cell's output, as text, into this process's output (the run's log)."""
    kind, content = message["msg_type"], message["content"]
    if kind == "stream":
        stream = sys.stderr if content.get("name") == "stderr" else sys.stdout
        stream.write(content.get("text", ""))
    elif kind == "error":
        sys.stdout.write(_ANSI.sub("", "\n".join(content.get("traceback") or [])) + "\n")
    elif kind in ("execute_result", "display_data"):
        text = (content.get("data") or {}).get("text/plain")
        if text:
            sys.stdout.write(text + "\n")
    sys.stdout.flush()


def is_oom_reply(reply: dict) -> bool:
    return reply.get("ename") == "OutOfMemoryError" or "CUDA out of memory" in str(reply.get("evalue", ""))


class NotebookRun:
    def __init__(self, options: argparse.Namespace):
        self.options = options
        self.notebook = os.path.abspath(options.notebook)
        self.stop_reason: str | None = None  # interrupted | terminated, from our signals
        self.kernel: Kernel | None = None

    def _stop_requested(self) -> bool:
        return self.stop_reason is not None

    def on_signal(self, signum, frame) -> None:
        self.stop_reason = "interrupted" if signum == signal.SIGINT else "terminated"

    def on_demand(self, signum, frame) -> None:
        """SIGUSR1: the kernel writes a capture now, between two of its bytecodes, while the cell runs on."""
        if self.kernel is not None:
            try:
                os.kill(self.kernel.pid, signal.SIGUSR1)
            except ProcessLookupError:
                pass

    def status(self, data: dict) -> None:
        write_json_atomically(self.options.status_file, data)

    def progress(self, data: dict) -> None:
        if self.options.progress_file:
            try:
                write_json_atomically(self.options.progress_file, data)
            except OSError:
                pass

    def recording_options(self) -> dict:
        options = self.options
        limit = options.memory_limit_text
        if options.memory_limit_bytes is not None and not limit:
            limit = str(options.memory_limit_bytes)
        elif options.memory_limit_fraction is not None and not limit:
            limit = repr(options.memory_limit_fraction)
        return {"capture": options.capture, "stacks": options.stacks, "max_entries": options.max_entries,
                "memory_limit": limit, "notebook": self.notebook, "source_root": options.source_root,
                "status_file": options.status_file, "run_id": options.run_id, "front_end": "vramlens",
                "census": options.census, "free_stacks": options.free_stacks}

    def run(self) -> int:
        try:
            cells = read_notebook(self.notebook)
        except NotebookError as error:
            self.status({"phase": "preflight", "ok": False, "message": str(error)})
            return EXIT_PREFLIGHT
        problem = missing_kernel_sentence()
        if problem:
            self.status({"phase": "preflight", "ok": False, "message": problem})
            return EXIT_PREFLIGHT
        kernel = self.kernel = Kernel()
        try:
            return self._run_in(kernel, cells)
        finally:
            kernel.shutdown()

    def _run_in(self, kernel: Kernel, cells) -> int:
        problem = kernel.wait_ready()
        if problem is None:
            code = f"__import__('runpy').run_path({_ENTRY!r})['start'](get_ipython(), {self.recording_options()!r})"
            reply = kernel.reply_to(kernel.send(code, silent=True), print_output, timeout_s=STARTUP_S)
            if reply is None:
                problem = "The kernel stopped answering while recording was being started."
            elif reply.get("status") != "ok":
                problem = str(reply.get("evalue") or reply.get("ename") or "Recording could not start in the kernel.")
        if problem:
            self.status({"phase": "preflight", "ok": False, "message": problem})
            return EXIT_PREFLIGHT
        kernel.capture_dir = self.options.capture
        self.status({"phase": "running", "ok": True, "pid": kernel.pid})
        outcome = self._cells(kernel, cells)
        if outcome == "died":
            return self._kernel_died(kernel)
        finish = "completed" if outcome == "ok" else outcome
        code = f"__import__('runpy').run_path({_ENTRY!r})['finish'](get_ipython(), {finish!r})"
        reply = kernel.reply_to(kernel.send(code, silent=True), print_output, timeout_s=FINISH_WAIT_S)
        if reply is None or reply.get("status") != "ok":
            print(f"vramlens: the kernel did not write its final capture ({(reply or {}).get('evalue', 'no answer')}).",
                  file=sys.stderr)
        return _EXIT_CODES.get(finish, 1)

    def _cells(self, kernel: Kernel, cells) -> str:
        """ok, or how the run stopped: oom | error | interrupted | terminated | died."""
        total = len(cells)
        for number, cell in enumerate(cells, start=1):
            if self.stop_reason:
                return self.stop_reason
            self.progress({"cell": cell.index + 1, "code_cell": number, "code_cells": total})
            print(f"vramlens: cell {cell.index + 1} ({number} of {total} code cells)", file=sys.stderr, flush=True)
            if not cell.source.strip():
                continue
            metadata = {INDEX_KEY: cell.index}
            if cell.cell_id:
                metadata["cellId"] = cell.cell_id
            reply = kernel.reply_to(kernel.send(cell.source, metadata=metadata), print_output,
                                    should_stop=self._stop_requested)
            if reply is None:
                return "died" if not kernel.alive() else self.stop_reason or "terminated"
            if reply.get("status") != "ok":
                if self.stop_reason:
                    return self.stop_reason
                if reply.get("ename") == "KeyboardInterrupt":
                    return "interrupted"
                return "oom" if is_oom_reply(reply) else "error"
        return self.stop_reason or "ok"

    def _kernel_died(self, kernel: Kernel) -> int:
        code = kernel.process.returncode
        written = os.path.isfile(os.path.join(self.options.capture, "capture.json"))
        sentence = f"The kernel died while running the notebook (exit code {code})"
        if written:
            print(f"vramlens: {sentence}; the last capture it wrote is kept.", file=sys.stderr)
            return 1
        self.status({"phase": "kernel", "ok": False, "message": f"{sentence} before it could write a capture; nothing was recorded."})
        return 1


def main(argv: list[str]) -> int:
    options = parse_args(argv)
    run = NotebookRun(options)
    signal.signal(signal.SIGTERM, run.on_signal)
    signal.signal(signal.SIGINT, run.on_signal)
    signal.signal(signal.SIGUSR1, run.on_demand)
    return run.run()
