"""Keep watch over the agent: forward the user's signals, end it at the timeout or on request.

The agent runs in a session of its own so that its whole process tree can be ended; the
price is that a terminal's Ctrl-C no longer reaches it by itself, so signals to vramlens
are passed on here: SIGINT as SIGINT (the script sees its KeyboardInterrupt), SIGUSR1 as
SIGUSR1 (a capture now, the run goes on), SIGTERM and SIGHUP as a request to end with the
capture kept.

Ending is bounded: the agent is sent SIGTERM and, on its control pipe, a request that works even
when the script ignores SIGTERM. It has ACK_GRACE_S to say it is writing the capture, then
TERMINATE_GRACE_S to finish writing; past either, the whole tree is killed. Once the agent has
exited, what is left of its tree gets TREE_GRACE_S after SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time

TERMINATE_GRACE_S = 30.0  # time the agent gets to write its capture once it has begun
ACK_GRACE_S = 5.0  # time the agent gets to begin writing after the request (it answers within a second)
TREE_GRACE_S = 2.0  # what the script left running gets this long after SIGTERM, then SIGKILL
_POLL_S = 0.2


class Supervisor:
    """Made, and its signal handlers installed (``signals()``), before the agent is started: a signal that
    arrives while the agent is being started is kept and passed on once it exists (``attach``)."""

    def __init__(self, timeout_s: float | None, cancel: threading.Event | None):
        self.child: subprocess.Popen | None = None
        self.deadline = time.monotonic() + timeout_s if timeout_s else None
        self.cancel = cancel
        self.ending: str | None = None  # timeout | cancelled | terminated, once we asked the agent to stop
        self.interrupted = False
        self._kill_at: float | None = None
        self._control_fd: int | None = None  # the agent's control pipe (agent/runner_watch.py), when it has one
        self._writing: threading.Event | None = None  # set by the agent when it begins writing its capture
        self._writing_seen = False
        self._pending: list[int] = []  # signals that came before the agent existed

    @contextlib.contextmanager
    def signals(self):
        """The user's signals are ours (and the agent's) while this lasts."""
        previous = self._install_handlers()
        try:
            yield self
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def attach(self, child: subprocess.Popen, control_fd: int | None = None,
               writing: threading.Event | None = None) -> None:
        self.child, self._control_fd, self._writing = child, control_fd, writing
        pending, self._pending = self._pending, []
        for signum in pending:
            self._send(signum)
        if self.ending is not None:
            self._end_now()

    def wait(self) -> int:
        while True:
            try:
                return self.child.wait(timeout=_POLL_S)
            except subprocess.TimeoutExpired:
                self._check_time()

    def _check_time(self) -> None:
        now = time.monotonic()
        if self.ending is None:
            if self.deadline is not None and now >= self.deadline:
                self.end("timeout")
            elif self.cancel is not None and self.cancel.is_set():
                self.end("cancelled")
        elif self._kill_at is not None:
            if not self._writing_seen and self._writing is not None and self._writing.is_set():
                self._writing_seen = True
                self._kill_at = now + TERMINATE_GRACE_S
            if now >= self._kill_at:
                end_process_group(self.child.pid, signal.SIGKILL)
                self._kill_at = None

    def end(self, reason: str) -> None:
        """Ask the agent to write its capture and stop; kill the tree if it does not in time."""
        if self.ending is None:
            self.ending = reason
            if self.child is not None:  # else attach() asks as soon as the agent exists
                self._end_now()

    def _end_now(self) -> None:
        self._send(signal.SIGTERM)
        answers = self._ask_agent_to_end()
        self._kill_at = time.monotonic() + (ACK_GRACE_S if answers else TERMINATE_GRACE_S)

    def _ask_agent_to_end(self) -> bool:
        """True when the agent has a control pipe (and so tells when it writes)."""
        if self._control_fd is None or self._writing is None:
            return False
        try:
            os.write(self._control_fd, b"end\n")
        except OSError:
            return False
        return True

    def _send(self, signum: int) -> None:
        if self.child is None:
            self._pending.append(signum)
            return
        try:
            self.child.send_signal(signum)
        except ProcessLookupError:
            pass

    def _install_handlers(self) -> dict:
        if threading.current_thread() is not threading.main_thread():
            return {}  # e.g. inside the language server: cancellation comes through `cancel`
        handlers = {
            signal.SIGINT: self._on_interrupt,
            signal.SIGTERM: lambda signum, frame: self.end("terminated"),
            signal.SIGHUP: lambda signum, frame: self.end("terminated"),
            signal.SIGUSR1: lambda signum, frame: self._send(signal.SIGUSR1),
        }
        return {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}

    def _on_interrupt(self, signum, frame) -> None:
        if self.interrupted and self.child is not None:  # a second Ctrl-C: stop waiting for a graceful end
            end_process_group(self.child.pid, signal.SIGKILL)
        self.interrupted = True
        self._send(signal.SIGINT)


def end_process_group(pid: int, sig: int = signal.SIGTERM) -> None:
    """Signal the whole group: the agent and what the script started (data loader workers, servers)."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def end_process_tree(pid: int, grace_s: float = TREE_GRACE_S) -> None:
    """End what the script left running: SIGTERM to the group, SIGKILL to whatever ignores it."""
    end_process_group(pid)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.05)
    end_process_group(pid, signal.SIGKILL)
