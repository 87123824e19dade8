"""Notice when the vramlens process that started this run asks it to end, or is gone.

A plain run: the runner holds the write end of a pipe whose read end is the link's third
descriptor. A byte on it asks for the end of the run with the capture kept, which works even when
the script ignores or replaced SIGTERM; the pipe's end (the runner died, even by SIGKILL) does the
same, and then the script's whole process tree is ended, since no one else will. Ranks started by
torchrun get no descriptor (torchrun passes none on): they look every second whether the runner's
process, named in the environment by its id and start time, still exists.
"""

from __future__ import annotations

import os
import threading
from typing import Callable

ENV_VAR = "VRAMLENS_RUNNER"  # "PID:START" of the runner, for processes that get no descriptor
POLL_S = 1.0


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, Linux), to tell it from a later one."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def runner_identity() -> str:
    """What the runner puts into ENV_VAR for the processes it starts."""
    return f"{os.getpid()}:{process_start(os.getpid()) or ''}"


def _alive(pid: int, start: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    return not start or process_start(pid) in (start, None)


class RunnerWatch:
    def __init__(self, on_end: Callable[[bool], None]):
        self._on_end = on_end  # on_end(runner_gone): end the run, keeping the capture

    def start(self, control_fd: int | None, runner: str | None) -> None:
        if control_fd is not None:
            threading.Thread(target=self._read, args=(control_fd,), name="vramlens-runner", daemon=True).start()
        elif runner:
            pid, _, start = runner.partition(":")
            if pid.isdigit():
                threading.Thread(target=self._poll, args=(int(pid), start), name="vramlens-runner", daemon=True).start()

    def _read(self, fd: int) -> None:
        try:
            received = os.read(fd, 64)
        except OSError:
            return
        self._on_end(not received)

    def _poll(self, pid: int, start: str) -> None:
        stop = threading.Event()
        while not stop.wait(POLL_S):
            if not _alive(pid, start):
                self._on_end(True)
                return
