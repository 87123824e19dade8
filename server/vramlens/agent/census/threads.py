"""Threads and their frames: which thread the census runs on, and what the main thread is doing.

The OOM observer can run on the autograd engine's thread during ``backward()``; the main
thread's stack then says where the user's code was ("in loss.backward() at train.py:40")
even though the failing allocation itself has no Python frame.
"""

from __future__ import annotations

import os
import sys
import threading

STACK_LIMIT = 200  # frames of the main thread's stack kept (the innermost ones)
CO_NEWLOCALS = 0x2  # set on functions' code; a module's or class body's code runs in a namespace


class Frames:
    """The frames executing now in every thread, outermost first, the census' own left out."""

    def __init__(self, own_folder: str):
        self.own_folder = own_folder.rstrip(os.sep) + os.sep
        self.main_ident = threading.main_thread().ident
        self.current_ident = threading.get_ident()
        self.thread_names = {thread.ident: thread.name for thread in threading.enumerate()}
        self.by_thread: dict[int, list] = {}
        for ident, top in sys._current_frames().items():
            chain, frame = [], top
            while frame is not None:
                if not self.is_own(frame.f_code.co_filename):
                    chain.append(frame)
                frame = frame.f_back
            chain.reverse()
            self.by_thread[ident] = chain

    def is_own(self, filename: str) -> bool:
        return filename.startswith(self.own_folder)

    def thread_name(self, ident: int) -> str | None:
        return self.thread_names.get(ident)  # None: a thread Python did not start (the autograd engine's)

    def all(self):
        """(frame, thread name) for every frame, the main thread's first, each thread outermost first."""
        for ident in sorted(self.by_thread, key=lambda ident: ident != self.main_ident):
            for frame in self.by_thread[ident]:
                yield frame, self.thread_name(ident)

    def thread_facts(self) -> dict:
        return {"name": self.thread_name(self.current_ident), "main": self.current_ident == self.main_ident}

    def main_stack(self) -> tuple[list[dict], int]:
        """The main thread's stack as {filename, line, name}, outermost first; and how many were left out."""
        chain = self.by_thread.get(self.main_ident, [])
        omitted = max(0, len(chain) - STACK_LIMIT)
        return [describe(frame) for frame in chain[omitted:]], omitted


def describe(frame) -> dict:
    code = frame.f_code
    return {"filename": code.co_filename, "line": frame.f_lineno, "name": code.co_name}


def is_module_level(frame) -> bool:
    """A module's or class body's frame, whose locals are a namespace rather than a function's."""
    return not frame.f_code.co_flags & CO_NEWLOCALS


class UserCode:
    """Which files are the user's: under the source root, outside installed packages."""

    def __init__(self, source_root: str | None, is_user_file=None):
        self.root = os.path.abspath(source_root).rstrip(os.sep) + os.sep if source_root else None
        self.predicate = is_user_file
        self._answers: dict[str, bool] = {}

    def __call__(self, filename: str) -> bool:
        answer = self._answers.get(filename)
        if answer is None:
            answer = self._answers[filename] = self._decide(filename)
        return answer

    def _decide(self, filename: str) -> bool:
        if self.predicate is not None:
            try:
                return bool(self.predicate(filename))
            except Exception:
                return False
        if self.root is None or not filename:
            return False
        path = os.path.abspath(filename)
        parts = path.split(os.sep)
        return path.startswith(self.root) and "site-packages" not in parts and "dist-packages" not in parts
