"""Module summaries kept on disk between runs, so that a second ``vramlens lint`` (or a new editor session) reads
again only the modules that changed.

An entry is one module's summary at one distance from the linted file, under a key made of the engine's own
source (a changed engine never reads an older engine's entries), the project root, the module's path and the
distance. It is used only while the module and every file and folder its summary was computed from still have
the stamps recorded with it, the same test the in-memory cache applies.

Entries are written by this program into the user's cache folder (``VRAMLENS_CACHE_DIR``, else
``$XDG_CACHE_HOME/vramlens``, else ``~/.cache/vramlens``), never into the project. They are read back with an
unpickler that builds only the summary's own classes, and anything unreadable, foreign or too large is a miss:
the module is summarised again. ``VRAMLENS_CACHE_DIR=off`` (or ``vramlens lint --no-cache``) turns it off.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import sys
import tempfile
from pathlib import Path

FORMAT = 1  # bumped when an entry's layout changes
_MAX_ENTRY = 8 << 20  # bytes: a summary is tens of kB; anything larger is not ours
_MAX_ENTRIES = 20_000  # entries kept; past it the least recently written half goes
_OFF = ("off", "0", "none", "")

# The only globals an entry may name: the summary's classes (and the builtin containers pickle names).
_ALLOWED = {
    ("vramlens.lint.project.index", "ModuleSummary"),
    ("vramlens.lint.project.index", "ProjectClass"),
    ("vramlens.lint.facts.project", "ProjectFunction"),
    ("vramlens.lint.flow.summaries", "Summary"),
    ("vramlens.lint.flow.summaries", "Effect"),
    ("builtins", "frozenset"),
    ("builtins", "set"),
}


class _SummaryUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a module summary")
        return super().find_class(module, name)


def cache_folder() -> Path | None:
    """Where entries live, or None when the cache is turned off."""
    chosen = os.environ.get("VRAMLENS_CACHE_DIR")
    if chosen is not None:
        return None if chosen.strip().lower() in _OFF else Path(chosen) / "lint-project"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vramlens" / "lint-project"


_ENGINE: str | None = None


def engine_fingerprint() -> str:
    """A hash of the lint engine's source files and of the Python that parses: entries of another engine, or of
    another Python's syntax trees, are never read."""
    global _ENGINE
    if _ENGINE is None:
        digest = hashlib.sha256(f"{FORMAT}|{sys.version_info[:2]}".encode())
        package = Path(__file__).resolve().parent.parent
        for source in sorted(package.rglob("*.py")):
            digest.update(str(source.relative_to(package)).encode())
            digest.update(source.read_bytes())
        _ENGINE = digest.hexdigest()
    return _ENGINE


class SummaryStore:
    """Load and save module summaries for one project root; every failure is a miss, never an error."""

    def __init__(self, root: str, folder: Path | None = None) -> None:
        self.root = root
        self._folder = folder
        self._pruned = False
        self.hits = 0  # entries read back, for tests and benchmarks

    @property
    def folder(self) -> Path | None:
        """Asked on every use: ``--no-cache`` may turn the cache off after the index was made."""
        return cache_folder() if self._folder is None else self._folder

    def _entry(self, path: str, hops: int) -> Path | None:
        folder = self.folder
        if folder is None:
            return None
        try:
            key = f"{engine_fingerprint()}|{self.root}|{path}|{hops}"
        except OSError:
            return None
        name = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        return folder / name[:2] / f"{name[2:34]}.pickle"

    def load(self, path: str, hops: int, stamp: tuple[int, int]):
        """(summary) recorded for the module at this stamp, or None. The caller checks its dependencies."""
        entry = self._entry(path, hops)
        if entry is None:
            return None
        try:
            with open(entry, "rb") as handle:
                raw = handle.read(_MAX_ENTRY + 1)
            if len(raw) > _MAX_ENTRY:
                return None
            recorded = _SummaryUnpickler(io.BytesIO(raw)).load()
        except FileNotFoundError:
            return None
        except Exception:  # noqa: BLE001 - a damaged or foreign entry is a miss
            return None
        if not (isinstance(recorded, tuple) and len(recorded) == 3 and recorded[0] == path and recorded[1] == stamp):
            return None
        self.hits += 1
        return recorded[2]

    def save(self, path: str, hops: int, stamp: tuple[int, int], summary) -> None:
        entry = self._entry(path, hops)
        if entry is None:
            return
        temporary = None
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            self._prune_once(entry.parent.parent)
            data = pickle.dumps((path, stamp, summary), protocol=pickle.HIGHEST_PROTOCOL)
            # Written whole, then renamed: another process reading the entry sees the old one or the new one.
            handle, temporary = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, entry)
        except Exception:  # noqa: BLE001 - a cache that cannot be written only makes the next run slower
            if temporary is not None:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass

    def _prune_once(self, folder: Path) -> None:
        """Keeps the folder bounded: once per process, past ``_MAX_ENTRIES`` the oldest half is removed."""
        if self._pruned:
            return
        self._pruned = True
        entries = [e for shard in folder.iterdir() if shard.is_dir() for e in shard.iterdir()]
        if len(entries) <= _MAX_ENTRIES:
            return
        entries.sort(key=lambda e: e.stat().st_mtime_ns)
        for old in entries[: len(entries) // 2]:
            try:
                old.unlink()
            except OSError:
                pass
