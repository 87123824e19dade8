"""The report's recorded paths, named as the rest of the analysis names them (load/sources.py), not as
the recording machine had them. A report is shared: an absolute path of the machine it was recorded on
says nothing elsewhere.

- a line the analysis names (``place``) is relative to the deepest of the roots, as its call paths are;
- a path in the capture's own text (the command, the traceback, a note, the confirming command) is
  relative to the recorded working directory, where that command ran; outside it, to the source root
  or the folder it was mapped onto here;
- outside every root, a traceback's frame names a notebook cell by its place and a library's file from
  its package; any other path stays as recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vramlens.analysis.load.sources import root_prefixes, shown_path, under_root
from vramlens.analysis.model import Analysis

# A traceback's frame line: ``  File "/abs/train.py", line 42, in step``
_FRAME_FILE = re.compile(r'^(\s*File ")([^"\n]+)(", line \d+)', re.MULTILINE)


@dataclass(frozen=True)
class ReportRoots:
    working: str | None  # the recorded working directory
    code: tuple[str, ...]  # the recorded source root (a raw pickle's: its user lines' folder), the folder here

    @property
    def every(self) -> tuple[str, ...]:
        return (*self.code, self.working) if self.working else self.code


def report_roots(analysis: Analysis, meta: dict) -> ReportRoots:
    cwd = meta.get("cwd")
    code = tuple(root for root in (analysis.user_root, analysis.local_root) if isinstance(root, str))
    return ReportRoots(cwd if isinstance(cwd, str) else None, code)


def relative_traceback(text: str, roots: ReportRoots, cells=None) -> str:
    """The traceback with each frame's file outside the roots named as the call paths name it; those
    under a root are left to ``relative_text``, with every other path of the report."""
    def frame_file(match: re.Match) -> str:
        path = match.group(2)
        shown = path if under_root(path, roots.every) is not None else shown_path(path, cells)
        return f"{match.group(1)}{shown}{match.group(3)}"
    return _FRAME_FILE.sub(frame_file, text)


def relative_text(text: str, roots: ReportRoots) -> str:
    """``text`` with every path under a root made relative to it, the working directory first; the roots
    themselves, and every other path, stay as they are."""
    for prefix in [*root_prefixes(roots.working), *root_prefixes(roots.code)]:
        text = re.sub(rf"(?<![\w.~/<>-]){re.escape(prefix)}(?=[^/\s])", "", text)
    return text
