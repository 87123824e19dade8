"""Safe loading of captures and raw snapshot pickles.

A snapshot pickle is untrusted input (it may come from another machine). PyTorch's
snapshots hold only builtins — dicts, lists, strings, numbers, booleans and None — so
the unpickler refuses every global: no class is ever looked up, no code ever runs.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import pickle
from dataclasses import dataclass, field
from pathlib import Path

from vramlens.capture.census import load_census
from vramlens.capture.errors import CaptureError
from vramlens.capture.format import FORMAT_NAME, META_FILE, SNAPSHOT_FILE
from vramlens.capture.notebook import check_notebook


class _BuiltinsOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):  # noqa: D401 - pickle's hook
        raise CaptureError(
            f"Refused to load the snapshot: it names the Python object {module}.{name}, "
            "which a PyTorch memory snapshot never contains (it may be malicious)."
        )

    def persistent_load(self, pid):
        raise CaptureError("Refused to load the snapshot: it uses persistent references, which a memory snapshot never has.")


@contextlib.contextmanager
def _cyclic_gc_paused():
    """A snapshot is millions of small dicts and lists and no cycles: while they are created the
    cyclic collector would scan them again and again for nothing (half the load time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_snapshot(path: str | Path) -> dict:
    """Read a snapshot pickle (protocols 2–5) without executing anything in it."""
    path = Path(path)
    try:
        with open(path, "rb") as raw:
            head = raw.read(2)
            if len(head) < 2 or head[0] != 0x80 or head[1] < 2:
                raise CaptureError(
                    f"{path.name} is not a PyTorch memory snapshot (not a pickle of protocol 2 or newer)."
                )
            if head[1] > pickle.HIGHEST_PROTOCOL:
                raise CaptureError(
                    f"{path.name} was written with pickle protocol {head[1]}, newer than this Python reads "
                    f"(up to {pickle.HIGHEST_PROTOCOL}); open it with a newer Python."
                )
            raw.seek(0)
            with _cyclic_gc_paused():
                snapshot = _BuiltinsOnlyUnpickler(io.BufferedReader(raw, 1 << 20)).load()
    except CaptureError:
        raise
    except FileNotFoundError:
        raise CaptureError(f"No snapshot at {path}.") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, MemoryError) as error:
        raise CaptureError(f"{path.name} is truncated or damaged and cannot be read as a snapshot ({error}).") from None
    if not isinstance(snapshot, dict) or not ("segments" in snapshot or "device_traces" in snapshot):
        raise CaptureError(f"{path.name} is a pickle but not a PyTorch memory snapshot (no segments or device_traces).")
    return snapshot


@dataclass
class Capture:
    """A loaded capture: the run's facts (``meta``), the allocator snapshot, and the tensor
    census at the snapshot's moment and near the peak (None when the capture has none: a
    version-1 capture, ``--no-census``, a raw snapshot)."""

    snapshot: dict
    meta: dict = field(default_factory=dict)
    path: Path | None = None
    census: dict | None = None
    peak_census: dict | None = None

    @property
    def is_raw_snapshot(self) -> bool:
        """True when only a pickle was given, without the facts a `vramlens run` records."""
        return not self.meta


def load_capture(path: str | Path) -> Capture:
    """Load a capture folder, its capture.json alone, or a raw ``_dump_snapshot`` pickle."""
    path = Path(path)
    if not path.exists():
        raise CaptureError(f"Nothing at {path}: give a capture folder or a snapshot pickle.")
    if path.is_file() and path.name == META_FILE:
        path = path.parent
    if path.is_dir():
        meta_path = path / META_FILE
        if not meta_path.is_file():
            raise CaptureError(f"{path} is a folder without {META_FILE}, so it is not a capture.")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise CaptureError(f"{meta_path} is damaged and cannot be read ({error}).") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
            raise CaptureError(f"{meta_path} is not a capture written by vramlens.")
        check_notebook(meta.get("notebook"), meta_path)
        censuses = {key: _census_beside(path, meta, key) for key in ("census", "peak_census")}
        snapshot_name = meta.get("snapshot", SNAPSHOT_FILE)
        if not snapshot_name or not (path / snapshot_name).is_file():
            # A run that ended before any allocator history existed (e.g. no CUDA) has facts but no snapshot.
            return Capture(snapshot={"segments": [], "device_traces": []}, meta=meta, path=path, **censuses)
        return Capture(snapshot=load_snapshot(path / snapshot_name), meta=meta, path=path, **censuses)
    return Capture(snapshot=load_snapshot(path), meta={}, path=path)


def _census_beside(folder: Path, meta: dict, key: str) -> dict | None:
    """The census file capture.json names under ``key`` (version 2 on), read and checked."""
    name = meta.get(key)
    if name is None:
        return None
    if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
        raise CaptureError(f"{META_FILE} names its {key.replace('_', ' ')} as {str(name)[:100]!r}, which is not a file name "
                           "in the capture folder.")
    return load_census(folder / name)
