"""Pass the agent's live figures (allocated, reserved) on while the script runs, for progress."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Callable

POLL_S = 0.5


class StatusWatch:
    def __init__(self, status_file: Path, on_status: Callable[[dict], None], poll_s: float = POLL_S,
                 required_key: str = "allocated"):
        self._file, self._on_status, self._poll_s = status_file, on_status, poll_s
        self._required = required_key  # a status without it (the agent's first word) is not progress
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="vramlens-status-watch", daemon=True)

    def start(self) -> "StatusWatch":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        last = None
        while not self._stop.wait(self._poll_s):
            try:
                status = json.loads(self._file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # not written yet, or being replaced
            if isinstance(status, dict) and self._required in status and status != last:
                last = status
                self._on_status(status)
