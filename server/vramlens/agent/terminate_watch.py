"""Write the capture on SIGTERM even while the script's main thread is stuck inside C code.

Python runs signal handlers only in the main thread, between bytecodes. A rank blocked in a CUDA
synchronisation behind a collective that will never finish (its peer died) runs none, and torchrun
kills it some seconds later with nothing written. The C-level handler still writes the signal's
number to the wakeup fd; a thread of ours reads it and, if the main thread has not begun the
capture within a moment, writes it itself. Whoever ``claim``s first writes; the other never does.
"""

from __future__ import annotations

import os
import signal
import threading
import time

MAIN_THREAD_GRACE_S = 1.0  # the main thread's own handler normally runs within microseconds


class TerminateWatch:
    def __init__(self, finish):
        self._finish = finish  # finish(signum): write the capture and end the process
        self._claimed = threading.Lock()

    def claim(self) -> bool:
        """True for the first caller only: that one writes the final capture."""
        return self._claimed.acquire(blocking=False)

    def start(self) -> None:
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        try:
            signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        except (ValueError, OSError):  # not the main thread, or no such support: the handler alone then
            os.close(read_fd)
            os.close(write_fd)
            return
        # A forked child (a data loader worker) must not wake this process's watcher with its own signals.
        os.register_at_fork(after_in_child=lambda: signal.set_wakeup_fd(-1))
        threading.Thread(target=self._watch, args=(read_fd,), name="vramlens-sigterm", daemon=True).start()

    def _watch(self, read_fd: int) -> None:
        while True:
            try:
                received = os.read(read_fd, 64)
            except OSError:
                return
            if not received:
                return
            if signal.SIGTERM in received:
                time.sleep(MAIN_THREAD_GRACE_S)
                if self.claim():
                    self._finish(signal.SIGTERM)
