"""Safe loading of captures and raw snapshot pickles: the boundary past which every type is trusted.

A snapshot or a capture folder is untrusted input (it may come from another machine). Each file
is read only if it is a regular file within its size limit (vramlens/regular_files.py), the
pickle is unpickled without executing anything and within bounded memory (capture/unpickle.py),
and what was loaded is checked against the documented shape once (capture/snapshot_shape.py,
capture/meta_shape.py). The limits are stated in docs/capture-format.md.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from vramlens.capture.census import load_census
from vramlens.capture.errors import CaptureError
from vramlens.capture.format import FORMAT_NAME, FORMAT_VERSION, META_FILE, SNAPSHOT_FILE
from vramlens.capture.memory_ceiling import unaffordable
from vramlens.capture.meta_shape import check_meta
from vramlens.capture.notebook import clean_notebook
from vramlens.capture.snapshot_shape import CheckedSnapshot, TraceFacts, check_snapshot
from vramlens.capture.unpickle import cyclic_gc_paused, unpickle_snapshot
from vramlens.regular_files import FileProblem, problem_with, read_regular_file

SNAPSHOT_LIMIT = 4 << 30  # a 4 GiB pickle takes about 35 GiB once loaded
META_LIMIT = 64 << 20  # capture.json: kilobytes to a few MiB with every NVML sample


@dataclass
class Capture:
    """A loaded capture: the run's facts (``meta``), the allocator snapshot, and the tensor census at
    the snapshot's moment and near the peak (None when the capture has none: a version-1 capture,
    ``--no-census``, a raw snapshot), each of checked shape."""

    snapshot: dict
    meta: dict = field(default_factory=dict)
    path: Path | None = None
    census: dict | None = None
    peak_census: dict | None = None
    notes: list[str] = field(default_factory=list)  # what loading found: fields read as unknown, stacks cut
    traces: dict[int, TraceFacts] = field(default_factory=dict)  # device -> what its trace holds (actions, marks)

    @property
    def is_raw_snapshot(self) -> bool:
        """True when only a pickle was given, without the facts a `vramlens run` records."""
        return not self.meta


def load_checked_snapshot(path: str | Path) -> CheckedSnapshot:
    """Read a snapshot pickle (protocols 2–5) without executing anything in it, and check its shape."""
    path = Path(path)
    problem = problem_with(path)
    if problem is None:
        too_much = unaffordable(os.stat(path).st_size)
        if too_much:  # refused before it is read: reading it alone would take its size again
            raise CaptureError(f"Cannot analyse the snapshot {path.name} on this machine: {too_much}.")
    try:
        data = read_regular_file(path, SNAPSHOT_LIMIT, "snapshot")
    except FileProblem as problem:
        raise CaptureError(f"Cannot read the snapshot: {problem}.") from None
    with cyclic_gc_paused():
        raw = unpickle_snapshot(data, path.name)
        size = len(data)
        del data  # the objects are all that is needed from here on
        return check_snapshot(raw, path.name, size)


def load_snapshot(path: str | Path) -> dict:
    """The snapshot at ``path`` as checked records (see load_checked_snapshot)."""
    return load_checked_snapshot(path).snapshot


def _read_meta(meta_path: Path) -> tuple[dict, dict, list[str]]:
    """(capture.json as written, its checked facts, notes on fields read as unknown)."""
    try:
        data = read_regular_file(meta_path, META_LIMIT, "capture.json")
    except FileProblem as problem:
        raise CaptureError(f"The capture's {META_FILE} cannot be read: {problem}.") from None
    try:
        raw = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        reason = "it nests too deeply" if isinstance(error, RecursionError) else str(error)[:200]
        raise CaptureError(f"{meta_path} is damaged and cannot be read ({reason}).") from None
    if type(raw) is not dict:
        held = {list: "a list", str: "text", int: "a number", float: "a number", bool: "true or false"}.get(type(raw), "null")
        raise CaptureError(f"{meta_path} is not a capture written by vramlens (it holds {held}, not a record).")
    if raw.get("format") != FORMAT_NAME:
        raise CaptureError(f"{meta_path} is not a capture written by vramlens.")
    notebook, notebook_notes = clean_notebook(raw.get("notebook"), meta_path)
    if notebook is not None:
        raw = dict(raw, notebook=notebook)
    meta, notes = check_meta(raw)
    notes += notebook_notes
    version = meta.get("version")
    if isinstance(version, int) and version > FORMAT_VERSION:
        notes.append(f"This capture was written by a newer VRAM Lens (format version {version}); "
                     "what this version does not know is ignored.")
    return raw, meta, notes


def _snapshot_name(raw_name, meta_path: Path) -> str | None:
    """The file the capture names as its snapshot: a plain file name inside the folder, or None."""
    if raw_name is None:
        return None
    if type(raw_name) is not str or not raw_name:
        raise CaptureError(f"{meta_path} names its snapshot as {json.dumps(raw_name)[:60]}, not a file name.")
    if raw_name in (".", "..") or "/" in raw_name or "\\" in raw_name or "\0" in raw_name:
        raise CaptureError(f"{meta_path} names a snapshot outside its folder ({raw_name[:100]}); "
                           "only a file in the capture folder is read.")
    return raw_name


def _folder_capture(path: Path) -> Capture:
    meta_path = path / META_FILE
    if not os.path.lexists(meta_path):
        raise CaptureError(f"{path} is a folder without {META_FILE}, so it is not a capture.")
    raw, meta, notes = _read_meta(meta_path)
    censuses = {key: _census_beside(path, raw, key, notes) for key in ("census", "peak_census")}
    name = _snapshot_name(raw.get("snapshot", SNAPSHOT_FILE), meta_path)
    if name is None:
        # A run that ended before any allocator history existed (e.g. no CUDA) has facts but no snapshot.
        return Capture(snapshot={"segments": [], "device_traces": []}, meta=meta, path=path, notes=notes, **censuses)
    snapshot_path = path / name
    problem = problem_with(snapshot_path)
    if problem:
        missing = not os.path.lexists(snapshot_path)
        raise CaptureError(f"The capture in {path} is incomplete: it names its snapshot {name}, but "
                           + (f"there is no {name} in the folder" if missing else problem) + ".")
    checked = load_checked_snapshot(snapshot_path)
    return Capture(snapshot=checked.snapshot, meta=meta, path=path, notes=notes + checked.notes,
                   traces=checked.traces, **censuses)


def _census_beside(folder: Path, raw: dict, key: str, notes: list[str]) -> dict | None:
    """The census file capture.json names under ``key`` (version 2 on), read and checked. One that is
    missing or cannot be trusted costs only what it would add: the snapshot is analysed without it,
    and a note says which file and why."""
    name = raw.get(key)
    if name is None:
        return None
    if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
        notes.append(f"{META_FILE} names its {key.replace('_', ' ')} as {str(name)[:100]!r}, which is not a file name "
                     "in the capture folder; the snapshot was analysed without it.")
        return None
    try:
        return load_census(folder / name)
    except CaptureError as error:
        notes.append(f"{str(error).rstrip('.')}; the snapshot was analysed without it (who holds the memory is not known).")
        return None


def load_capture(path: str | Path) -> Capture:
    """Load a capture folder, its capture.json alone, or a raw ``_dump_snapshot`` pickle."""
    path = Path(path)
    if not os.path.lexists(path):
        raise CaptureError(f"Nothing at {path}: give a capture folder or a snapshot pickle.")
    if path.name == META_FILE and not path.is_dir():
        path = path.parent
    if path.is_dir():
        return _folder_capture(path)
    checked = load_checked_snapshot(path)
    return Capture(snapshot=checked.snapshot, meta={}, path=path, notes=checked.notes,
                   traces=checked.traces)
