"""A tiny pipe protocol to the vramlens process that started us.

At the moments that matter (the OOM, the exit) the agent asks the server side to take an
NVML sample by this process's PID, and waits briefly for the answer, so the sample shows
the device as it was at that moment; it also says when it begins writing the final capture,
so the runner waits for it. A third descriptor carries the runner's requests to end
(agent/runner_watch.py). Without a link (e.g. started by hand) it does nothing.
"""

from __future__ import annotations

import os
import select

ENV_VAR = "VRAMLENS_AGENT_LINK"
WRITING = "writing"  # the line that says the final capture is being written (no sample is taken for it)
_ACK_TIMEOUT_S = 2.0


class RunnerLink:
    def __init__(self, spec: str | None):
        self._out = self._in = None
        self.control_fd: int | None = None  # the runner's requests to end (agent/runner_watch.py)
        if spec:
            try:
                fds = [int(part) for part in spec.split(",")]
            except ValueError:
                fds = []
            if len(fds) in (2, 3):
                self._out, self._in = fds[0], fds[1]
                self.control_fd = fds[2] if len(fds) == 3 else None

    @classmethod
    def from_environment(cls) -> "RunnerLink":
        # Taken out of the environment so the user's own child processes don't inherit it.
        return cls(os.environ.pop(ENV_VAR, None))

    def writing_capture(self) -> None:
        """Tell the runner the final capture is being written: it then waits for it before killing."""
        if self._out is None:
            return
        try:
            os.write(self._out, (WRITING + "\n").encode())
        except OSError:
            self._out = self._in = None

    def request_sample(self, phase: str) -> None:
        if self._out is None:
            return
        try:
            os.write(self._out, (phase + "\n").encode())
            ready, _, _ = select.select([self._in], [], [], _ACK_TIMEOUT_S)
            if ready:
                os.read(self._in, 64)
        except OSError:
            self._out = self._in = None
