"""While the script runs: its allocated and reserved bytes, in the status file every half second.

The runner reads them for live progress (the editor shows "Running: 1.20 GiB allocated ·
2.00 GiB reserved"). Written by a daemon thread of the agent's own process only; a forked child
(a data loader worker) never writes. ``on_sample(allocated)`` is given each reading too (the
peak census watches it).
"""

from __future__ import annotations

import json
import os
import threading
import time

INTERVAL_S = 0.5


def _write(path: str, data: dict) -> None:
    tmp = f"{path}.live.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(data, out)
    os.replace(tmp, path)  # readers see the old figures or the new ones, never half


def start(torch, device: int, status_file: str, interval_s: float = INTERVAL_S, on_sample=None) -> None:
    pid = os.getpid()

    def report() -> None:
        while True:
            if os.getpid() != pid:
                return
            try:
                allocated = int(torch.cuda.memory_allocated(device))
                _write(status_file, {
                    "phase": "running", "ok": True, "pid": pid, "time": time.time(),
                    "allocated": allocated, "reserved": int(torch.cuda.memory_reserved(device)),
                })
            except Exception:  # figures for progress only: never a reason to disturb the run
                return
            if on_sample is not None:
                try:
                    on_sample(allocated)
                except Exception:
                    pass
            time.sleep(interval_s)

    threading.Thread(target=report, name="vramlens-live-status", daemon=True).start()
