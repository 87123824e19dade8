"""A tiny pipe protocol to the vramlens process that started us.

At the moments that matter (the OOM, the exit) the agent asks the server side to take an
NVML sample by this process's PID, and waits briefly for the answer, so the sample shows
the device as it was at that moment. Without a link (e.g. started by hand) it does nothing.
"""

from __future__ import annotations

import os
import select

ENV_VAR = "VRAMLENS_AGENT_LINK"
_ACK_TIMEOUT_S = 2.0


class RunnerLink:
    def __init__(self, spec: str | None):
        self._out = self._in = None
        if spec:
            try:
                out_fd, in_fd = (int(part) for part in spec.split(","))
                self._out, self._in = out_fd, in_fd
            except ValueError:
                pass

    @classmethod
    def from_environment(cls) -> "RunnerLink":
        # Taken out of the environment so the user's own child processes don't inherit it.
        return cls(os.environ.pop(ENV_VAR, None))

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
