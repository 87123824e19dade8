"""Where an import of the linted file leads, inside the project's folder only.

``import a.b``, ``from a.b import C`` and ``from .x import f`` are looked up as files below the project root
(the folder of the importing file first, as Python puts a script's folder first on its path, then each folder
above it up to the root);
nothing outside the root is ever named, nor anything in a virtual environment or an installed package, and no
code is run. A module found nowhere there is another package's (torch, lightning): unknown here.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..parse.source import SOURCE_LIMIT

# Folders that hold installed or generated code, never the project's own modules.
_NOT_PROJECT = frozenset({
    ".git", ".hg", ".venv", "venv", "env", "__pycache__", "node_modules", ".tox", ".mypy_cache", "site-packages",
    "dist-packages", "build", "dist",
})

Source = tuple[int, str, "str | None"]  # (level, module, name) of one import, as facts/file_facts.py records it
Stamp = tuple[int, int]  # a file's (mtime_ns, size); a folder's (mtime_ns, FOLDER)
FOLDER = -1


class Resolver:
    """Looks files up through folder listings, each read again only when its folder's mtime changed; within
    one lint (between two ``begin`` calls) a folder, a file's stamp and a real path are asked once."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = os.path.realpath(root)
        self._listings: dict[str, tuple[int, frozenset[str]]] = {}  # folder -> (mtime_ns, its entries)
        self._checked: dict[str, tuple[int | None, frozenset[str]]] = {}  # folders listed or checked in this lint
        self._stamps: dict[str, tuple[int, int] | None] = {}
        self._real: dict[str, str] = {}
        self._consulted: dict[str, Stamp] | None = None  # where ``locate`` records the folders it lists

    def begin(self) -> None:
        """A new lint: the files may have changed since the last one."""
        self._checked.clear()
        self._stamps.clear()
        self._real.clear()

    def inside(self, path: str) -> bool:
        """``path`` (a real path) lies below the root and in none of the folders of installed code."""
        root = self.root
        if path != root and not path.startswith(root.rstrip(os.sep) + os.sep):
            return False
        relative = path[len(root):].strip(os.sep)
        return not any(part in _NOT_PROJECT or part.startswith(".") for part in relative.split(os.sep) if part)

    def stamp(self, path: str) -> tuple[int, int] | None:
        """(mtime_ns, size) of a regular file small enough to check, else None."""
        if path in self._stamps:
            return self._stamps[path]
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            found = None
        else:
            found = (info.st_mtime_ns, info.st_size) if stat.S_ISREG(info.st_mode) and info.st_size <= SOURCE_LIMIT else None
        self._stamps[path] = found
        return found

    def present(self, path: str, recorded: Stamp) -> Stamp | None:
        """The present stamp of what ``recorded`` was taken of: a file's, or a folder's."""
        return self.folder_stamp(path) if recorded[1] == FOLDER else self.stamp(path)

    def folder_stamp(self, folder: str) -> Stamp | None:
        self._entries(folder)
        mtime = self._checked[folder][0]
        return None if mtime is None else (mtime, FOLDER)

    def _entries(self, folder: str) -> frozenset[str]:
        checked = self._checked.get(folder)
        if checked is None:
            try:
                mtime = os.stat(folder).st_mtime_ns
                listed = self._listings.get(folder)
                if listed is None or listed[0] != mtime:
                    listed = self._listings[folder] = (mtime, frozenset(os.listdir(folder)))
                checked = (mtime, listed[1])
            except (OSError, ValueError):
                checked = (None, frozenset())
            self._checked[folder] = checked
        if self._consulted is not None and checked[0] is not None:
            self._consulted[folder] = (checked[0], FOLDER)
        return checked[1]

    def _realpath(self, path: str) -> str:
        real = self._real.get(path)
        if real is None:
            real = self._real[path] = os.path.realpath(path)
        return real

    def module_file(self, parts: list[str], base: str) -> str | None:
        """The file of the module ``parts`` below the folder ``base``: ``a/b.py`` or ``a/b/__init__.py``."""
        if not all(part.isidentifier() for part in parts):
            return None
        folder = base
        for part in parts[:-1]:
            if part not in self._entries(folder):
                return None  # most imports name another package: one look at a listing says so
            folder = os.path.join(folder, part)
        candidates = []
        if parts:
            last = parts[-1]
            entries = self._entries(folder)
            if last + ".py" in entries:
                candidates.append(os.path.join(folder, last + ".py"))
            if last in entries:
                candidates.append(os.path.join(folder, last, "__init__.py"))
        else:
            candidates.append(os.path.join(folder, "__init__.py"))
        for candidate in candidates:
            real = self._realpath(candidate)
            if self.inside(real) and self.stamp(real) is not None:
                return real
        return None

    def _bases(self, importer: str, level: int) -> list[str]:
        """The folders an import of ``importer`` is looked up in: its package (``level`` up) for a relative one."""
        folder = os.path.dirname(importer)
        if level:
            for _ in range(level - 1):
                folder = os.path.dirname(folder)
            return [folder] if self.inside(self._realpath(folder)) else []
        # The importer's folder, then each folder above it up to the root: a script's folder is first on Python's
        # path, and the folder a program runs from (or that an editable install adds) may be any of those above.
        found = []
        while self.inside(self._realpath(folder)):
            found.append(folder)
            parent = os.path.dirname(folder)
            if parent == folder or self._realpath(folder) == self.root:
                break
            folder = parent
        return found + ([self.root] if self.root not in found else [])

    def locate(self, importer: str, source: Source, rest: list[str],
               consulted: dict[str, Stamp] | None = None) -> tuple[str, list[str]] | None:
        """(the file, the names inside it) that ``local.rest…`` names, where ``local`` was imported by
        ``source``; the longest module path that is a file wins (``a.b.f``: ``a/b.py``, then ``f`` in it).
        The folders whose listings decided it go to ``consulted``: a file added there may change the answer."""
        self._consulted = consulted
        try:
            return self._locate(importer, source, rest)
        finally:
            self._consulted = None

    def _locate(self, importer: str, source: Source, rest: list[str]) -> tuple[str, list[str]] | None:
        level, module, name = source
        modules = module.split(".") if module else []
        names = ([name] if name else []) + rest
        for base in self._bases(importer, level):
            for cut in range(len(names), -1, -1):
                if not modules and not cut and not level:
                    continue
                found = self.module_file(modules + names[:cut], base)
                if found is not None:
                    return found, names[cut:]
        return None


def qualified(base: str, sources: dict[str, Source]) -> str | None:
    """A base class's name qualified through the imports of the file that writes it (``pl.LightningModule``:
    ``pytorch_lightning.LightningModule``); None for a relative import, which only the project could resolve."""
    head, dot, rest = base.partition(".")
    source = sources.get(head)
    if source is None:
        return base  # a builtin or a name this file defines or star-imports: as written
    level, module, name = source
    if level:
        return None
    prefix = f"{module}.{name}" if name else module
    return f"{prefix}{dot}{rest}"
