"""Where a call-path frame's file is on this machine, as a link the editor opens at the line.

A user frame is looked up under the folder the capture was mapped onto; a library frame
(``transformers/models/gpt2/modeling_gpt2.py``) under the server's import path, which is the
interpreter the user chose. A frame found nowhere gets no link rather than a wrong one, and so
does a torch frame when the torch here is not the release that recorded the capture (its lines
would point elsewhere).
"""

from __future__ import annotations

import os
import re
import sys
from importlib import metadata
from pathlib import Path

from pygls.uris import from_fs_path

TORCH_PREFIX = "torch/"


def is_torch_frame(short_path: str) -> bool:
    return short_path.replace("\\", "/").startswith(TORCH_PREFIX)


_FILE_FRAME = re.compile(r"^(?P<path>.+?):(?P<line>\d+)(?: (?P<function>.*))?$")
_CELL_FRAME = re.compile(r"^(?P<path>.+ line (?P<line>\d+))(?: (?P<function>.*))?$")  # `train.ipynb cell 4 line 7 step`


def split_frame(frame: str) -> tuple[str, int | None, str]:
    """``"torch/nn/modules/linear.py:134 forward"`` -> ("torch/nn/modules/linear.py", 134, "forward");
    a notebook cell's frame, ``"train.ipynb cell 4 line 7 step"`` -> ("train.ipynb cell 4 line 7", 7, "step")."""
    match = _FILE_FRAME.match(frame) or _CELL_FRAME.match(frame)
    if match is None:
        where, _, function = frame.partition(" ")
        return where, None, function
    return match["path"], int(match["line"]), match["function"] or ""


def line_uri(path: str, line: int | None) -> str:
    """``file:///…/train.py#L20``: VS Code opens a file link at the line its fragment names."""
    uri = from_fs_path(path) or Path(path).as_uri()
    return f"{uri}#L{line}" if line else uri


def installed_torch() -> str | None:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


class FrameLinker:
    def __init__(self, local_root: str | None, recorded_torch: str | None = None,
                 search_path: list[str] | None = None, local_torch: str | None = None):
        self.roots = [root for root in [local_root, *(search_path if search_path is not None else sys.path)]
                      if root and os.path.isdir(root)]
        self.same_torch = bool(recorded_torch) and (local_torch or installed_torch()) == recorded_torch
        self._found: dict[str, str | None] = {}

    def local_file(self, short_path: str) -> str | None:
        if short_path not in self._found:
            self._found[short_path] = next(
                (str(Path(root, short_path)) for root in self.roots if Path(root, short_path).is_file()), None)
        return self._found[short_path]

    def uri(self, frame: str) -> str | None:
        path, line, _ = split_frame(frame)
        if is_torch_frame(path) and not self.same_torch:
            return None
        local = self.local_file(path)
        return line_uri(local, line) if local else None
