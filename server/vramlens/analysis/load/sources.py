"""Which frames are the user's code, and where their files are on this machine.

User code = frames under the source root; torch, site-packages, the standard library,
C++ frames (``??``) and ``<frozen …>`` are the call path, never the culprit. A capture from
another machine is mapped onto local files by path suffix (the longest existing suffix wins).

A frame's file name comes from the capture, which may come from anyone: only a Python source
file under the local root (its real path, symbolic links resolved, no hidden folder on the way)
is ever opened, so a frame naming ``/etc/passwd``, ``../../.ssh/id_rsa`` or a link out of the
root shows nothing. Without a local root nothing is read.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

from vramlens.regular_files import FileProblem, read_regular_file

USER, LIBRARY, NATIVE = 1, 2, 3

_NATIVE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".cu", ".cuh")
_LIBRARY_MARKERS = ("/site-packages/", "/dist-packages/", "/lib/python3", "/lib64/python3", "/torch/", "/vramlens/agent/")
SOURCE_SUFFIXES = (".py", ".pyw", ".pyx", ".ipynb")  # a notebook: its cells are the source
SOURCE_LIMIT = 16 << 20  # a source file larger than this is not read to show one of its lines
MAX_SUFFIX_PARTS = 32  # a recorded path is mapped by its last 32 parts at most
MAX_PROBES = 20_000  # file-system look-ups per analysis: a capture naming a million paths stays quick


def frame_kind(filename: str, recorded_root: str | None) -> int:
    """USER, LIBRARY or NATIVE for one frame's file name."""
    if not filename or filename == "??" or filename.startswith("<") or filename.endswith(_NATIVE_SUFFIXES):
        return NATIVE
    normalized = filename.replace("\\", "/")
    if recorded_root:
        root = recorded_root.replace("\\", "/").rstrip("/") + "/"
        if not normalized.startswith(root):
            return LIBRARY
        normalized = "/" + normalized[len(root):]  # markers count only inside the root (a venv in the project)
    if any(marker in normalized for marker in _LIBRARY_MARKERS):
        return LIBRARY
    if normalized.startswith("torch/"):
        return LIBRARY
    return USER


def short_path(filename: str, recorded_root=None) -> str:
    """A path a reader recognises: relative to the root, from ``torch/``, or after site-packages.

    ``recorded_root``: one root, or several (the source root, the working directory, the workspace
    folder): a path under more than one is named from the deepest."""
    normalized = filename.replace("\\", "/")
    return under_root(normalized, recorded_root) or library_path(normalized) or PurePosixPath(normalized).name or normalized


def library_path(filename: str) -> str | None:
    """A library's file from its package (``torch/nn/modules/linear.py``), or None for any other path."""
    normalized = filename.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in normalized:
            return normalized.split(marker, 1)[1]
    if "/torch/" in normalized:
        return "torch/" + normalized.rsplit("/torch/", 1)[1]
    return None


def shown_path(filename: str, cells=None) -> str:
    """A recorded path outside the roots, inside text for people (a traceback's frame): a notebook cell by
    its place, a library's from its package, any other path as recorded (its name alone would not tell
    which file it is)."""
    ref = cells.ref(filename) if cells is not None and filename else None
    return ref.label if ref is not None else library_path(filename) or filename


def place_of(filename: str, line: int | None, cells=None, roots=None) -> str:
    """Where a recorded line is, for people: ``train.py:42``, a notebook cell's ``train.ipynb cell 4 line 7``
    (``cells``: load.notebook's NotebookFacts, whose cells ran under made-up file names), a library's
    ``torch/nn/modules/linear.py:125``; under one of ``roots``, a path relative to it."""
    ref = cells.ref(filename) if cells is not None and filename else None
    name = ref.label if ref is not None else short_path(str(filename), roots)
    if line is None:
        return name
    return f"{name} line {line}" if ref is not None else f"{name}:{line}"


def root_prefixes(roots) -> list[str]:
    """Roots (one, or several) as prefixes ending in "/", the deepest first; the file system's root itself is none."""
    given = [roots] if isinstance(roots, str) else list(roots or ())
    prefixes = {root.replace("\\", "/").rstrip("/") + "/" for root in given if root and root.replace("\\", "/").strip("/")}
    return sorted(prefixes, key=len, reverse=True)


def under_root(filename: str, roots) -> str | None:
    """The path relative to the deepest of ``roots`` it lies under, or None."""
    normalized = filename.replace("\\", "/")
    for root in root_prefixes(roots):
        if normalized.startswith(root) and len(normalized) > len(root):
            return normalized[len(root):]
    return None


def usable_recorded_root(root: str | None) -> bool:
    """Whether the source root a capture names may serve as the local root here: it exists, and it is
    a project's folder, not the file system's root, the home folder or a folder above it (a capture
    from elsewhere could name those to have any file shown)."""
    if not root or not os.path.isdir(root):
        return False
    real = os.path.realpath(root)
    home = os.path.realpath(os.path.expanduser("~"))
    if real == os.path.dirname(real):  # "/" (or a drive's root)
        return False
    return not (home == real or home.startswith(real.rstrip(os.sep) + os.sep))


class SourceResolver:
    """Classifies frames and finds their files here; every answer is cached per file name.

    A capture recorded in a Jupyter kernel brings its cells (``cells``): their code ran under
    made-up file names, which are the user's code, shown as ``notebook.ipynb cell 4``."""

    def __init__(self, recorded_root: str | None = None, local_root: str | None = None, cells=None):
        self.recorded_root = recorded_root or None
        self.local_root = os.path.abspath(local_root) if local_root else None
        self._real_root = os.path.realpath(self.local_root) if self.local_root else None
        self._probes_left = MAX_PROBES
        self.cells = cells  # load.notebook.NotebookFacts, or None
        self.kind_cache: dict[str, int] = {}
        self.user_files: set[str] = set()  # the same answers as sets, for the replay's hot loop
        self.other_files: set[str] = set()
        self._local: dict[str, str | None] = {}
        self._lines: dict[str, list[str] | None] = {}
        self._user_by_mapping = False

    @property
    def user_by_mapping(self) -> bool:
        """A raw pickle with --source-root: user code is what maps onto a file under that root."""
        return self._user_by_mapping

    def use_mapping_if_it_matches(self, filenames) -> bool:
        """Turn mapping-based user code on when the local root holds at least one of these files
        (frames outside torch and site-packages); otherwise the heuristic alone decides."""
        self._user_by_mapping = False
        if self.recorded_root or not self.local_root:
            return False
        candidates = {name for name in filenames if frame_kind(name, None) == USER}
        self._user_by_mapping = any(self.local_path(name) for name in candidates)
        self.kind_cache.clear()
        self.user_files.clear()
        self.other_files.clear()
        return self._user_by_mapping

    def kind(self, filename: str) -> int:
        kind = self.kind_cache.get(filename)
        if kind is None:
            kind = USER if self.cells is not None and self.cells.is_cell(filename) else frame_kind(filename, self.recorded_root)
            if kind == USER and self._user_by_mapping and self.local_path(filename) is None and self.cell_ref(filename) is None:
                kind = LIBRARY  # in no folder of the user's project
            self.kind_cache[filename] = kind
            (self.user_files if kind == USER else self.other_files).add(filename)
        return kind

    def short(self, filename: str) -> str:
        return place_of(filename, None, self.cells, self.recorded_root)

    def place(self, filename: str, line: int | None) -> str:
        """``train.py:42``, or for a cell ``train.ipynb cell 4 line 7``."""
        return place_of(filename, line, self.cells, self.recorded_root)

    def cell_ref(self, filename: str | None):
        """The notebook cell this recorded file name stands for, or None."""
        return self.cells.ref(filename) if self.cells is not None and filename else None

    def local_path(self, filename: str | None) -> str | None:
        """The file on this machine that the recorded path stands for, or None."""
        if not filename:
            return None
        if filename not in self._local:
            self._local[filename] = self._find_local(filename)
        return self._local[filename]

    def _find_local(self, filename: str) -> str | None:
        if not self.local_root or not filename.endswith(SOURCE_SUFFIXES):
            return None
        parts = [p for p in filename.replace("\\", "/").split("/") if p and p not in (".", "..")][-MAX_SUFFIX_PARTS:]
        for start in range(len(parts)):  # longest suffix first
            candidate = os.path.join(self.local_root, *parts[start:])
            if self._is_sourceunder_root(candidate):
                return candidate
        return None

    def _is_sourceunder_root(self, candidate: str) -> bool:
        """A regular file whose real path lies under the root's, with no hidden folder below it."""
        if self._probes_left <= 0:
            return False
        self._probes_left -= 1
        if not os.path.isfile(candidate):
            return False
        real = os.path.realpath(candidate)
        if not real.startswith(self._real_root.rstrip(os.sep) + os.sep):
            return False
        inside = real[len(self._real_root):].strip(os.sep).split(os.sep)
        return not any(part.startswith(".") for part in inside) and real.endswith(SOURCE_SUFFIXES)

    def source_line(self, filename: str | None, line: int | None) -> str | None:
        if self.cells is not None and filename and self.cells.is_cell(filename):
            return self.cells.source_line(filename, line)
        lines = self.source_lines(filename) if line else None
        if lines is None or not 0 < line <= len(lines):
            return None
        return lines[line - 1].strip()

    def source_lines(self, filename: str | None) -> list[str] | None:
        """The whole text of a recorded user file (a notebook cell's code too), as lines; None when not here."""
        if self.cells is not None and filename and self.cells.is_cell(filename):
            run = self.cells.run_of(filename)
            return run.lines if run is not None else None
        local = self.local_path(filename)
        if local is None:
            return None
        if local not in self._lines:
            try:
                text = read_regular_file(local, SOURCE_LIMIT, "source file").decode("utf-8", errors="replace")
                self._lines[local] = text.splitlines()
            except FileProblem:
                self._lines[local] = None
        return self._lines[local]
