"""One line of the user's code as an experiment's run reads it, the file on disk untouched.

How a fix is measured before the user applies it: the storing line's proven edit (``.detach()``,
``.item()``…) is handed to the agent as ``--source-edit {path, line, before, after}``. The main script is
compiled from the edited text under its own file name; a module the script imports is loaded from the
edited text by a finder placed first on ``sys.meta_path`` for that one file (no bytecode is read or
written for it, so no cache is left that the user's next run would pick up). Line numbers stay the
same: the edit rewrites one line into one line.

The line must still read ``before``: a file changed since the capture is refused before the run starts
(measuring another program and calling it the fix is worse than measuring nothing). Processes the script
spawns (DataLoader workers) read the file as it is on disk.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import sys


class SourceEdit:
    def __init__(self, path: str, line: int, before: str, after: str):
        self.path, self.line, self.before, self.after = os.path.abspath(path), line, before, after
        self.text: str | None = None  # the edited file's text, read once by read()

    @classmethod
    def parse(cls, text: str) -> "SourceEdit":
        """From the runner's JSON; ValueError with the reason when it is not one."""
        try:
            data = json.loads(text)
            edit = cls(data["path"], data["line"], data["before"], data["after"])
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"--source-edit is not an edit ({error})") from None
        if not (isinstance(edit.line, int) and edit.line >= 1 and isinstance(edit.before, str)
                and isinstance(edit.after, str) and "\n" not in edit.after):
            raise ValueError("--source-edit needs a line number and one line of text before and after")
        return edit

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "before": self.before, "after": self.after}

    def read(self) -> None:
        """Read the file once, before the run, and keep its edited text: OSError when it cannot be read,
        ValueError when the line no longer reads ``before``."""
        with open(self.path, "rb") as handle:
            lines = handle.read().decode("utf-8").split("\n")
        if self.line > len(lines) or lines[self.line - 1].rstrip("\r") != self.before.rstrip("\r"):
            raise ValueError(f"The fix to measure no longer applies: line {self.line} of {self.path} changed since "
                             "the capture; record the run again.")
        ending = "\r" if lines[self.line - 1].endswith("\r") else ""
        lines[self.line - 1] = self.after + ending
        self.text = "\n".join(lines)

    def edited_text(self) -> str:
        """The file's text with the line replaced, as read() found it."""
        if self.text is None:
            self.read()
        return self.text

    def is_file(self, path: str) -> bool:
        try:
            return os.path.samefile(path, self.path)
        except OSError:
            return False

    def install_for_imports(self) -> None:
        """The edited text for every import of the file (the main script is compiled by its runner)."""
        sys.meta_path.insert(0, _EditedFileFinder(self))


class _EditedFileFinder:
    """Finds modules as the standard path finder does; for the edited file, loads the edited text."""

    def __init__(self, edit: SourceEdit):
        self.edit = edit

    def find_spec(self, name, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or not spec.origin or not self.edit.is_file(spec.origin):
            return spec
        spec.loader = _EditedSourceLoader(name, spec.origin, self.edit)
        return spec

    def invalidate_caches(self) -> None:
        importlib.machinery.PathFinder.invalidate_caches()


class _EditedSourceLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, name: str, path: str, edit: SourceEdit):
        super().__init__(name, path)
        self.edit = edit

    def get_data(self, path):
        if self.edit.is_file(path):
            return self.edit.edited_text().encode("utf-8")
        return super().get_data(path)

    def path_stats(self, path):
        raise OSError("edited in memory: no bytecode cache")  # read from the edited text, never from a .pyc

    def set_data(self, path, data, *, _mode=0o666):
        pass  # no bytecode of the edited text is written
