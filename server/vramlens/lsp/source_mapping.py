"""Which local folder a capture's recorded paths map onto, inside a workspace folder.

A capture from another machine names files such as ``/srv/app/serve.py`` or
``/home/me/project/scenarios/train.py``. The analysis maps a recorded path onto
``ROOT/<a suffix of it>``; this module picks ROOT: the workspace folder itself when a suffix
matches there, else the sub-folder where a file of the same name ends the longest common suffix.
"""

from __future__ import annotations

import os
from pathlib import Path

from vramlens.analysis.load.snapshot import block_frames, device_segments, device_trace, pick_device
from vramlens.analysis.load.sources import USER, frame_kind
from vramlens.capture import Capture

SAMPLED_ENTRIES = 2000
MAX_FILES = 20000  # a workspace walk stops here: mapping must not stall on a huge tree
_SKIPPED_DIRS = {"node_modules", "__pycache__", "site-packages", "dist-packages", "venv", "env"}


def recorded_user_files(capture: Capture) -> set[str]:
    """User-looking file names from the first allocations and the final blocks of the capture."""
    snapshot, meta = capture.snapshot, capture.meta
    root = meta.get("source_root")
    device = pick_device(snapshot, meta)
    names: set[str] = set()
    for entry in device_trace(snapshot, device)[:SAMPLED_ENTRIES]:
        names.update(frame.get("filename", "??") for frame in entry.get("frames") or ())
    for segment in device_segments(snapshot, device):
        for block in (segment.get("blocks") or ())[:SAMPLED_ENTRIES]:
            names.update(frame.get("filename", "??") for frame in block_frames(block))
    return {name for name in names if frame_kind(name, root) == USER}


def _parts(path: str) -> list[str]:
    return [part for part in path.replace("\\", "/").split("/") if part]


def _maps_under(folder: Path, recorded: str) -> bool:
    parts = _parts(recorded)
    return any(folder.joinpath(*parts[start:]).is_file() for start in range(len(parts)))


def _python_files(folder: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    count = 0
    for directory, subdirs, files in os.walk(folder):
        subdirs[:] = [d for d in subdirs if not d.startswith(".") and d not in _SKIPPED_DIRS]
        for name in files:
            if name.endswith(".py"):
                found.setdefault(name, []).append(Path(directory, name))
                count += 1
        if count >= MAX_FILES:
            break
    return found


def _common_suffix(recorded: list[str], local: Path) -> int:
    local_parts = local.parts
    count = 0
    while count < min(len(recorded), len(local_parts)) and recorded[-1 - count] == local_parts[-1 - count]:
        count += 1
    return count


def choose_source_root(folder: str | Path, recorded_files: set[str]) -> str:
    """The folder under ``folder`` that the recorded user files map onto (``folder`` when unsure)."""
    folder = Path(folder)
    if not recorded_files or any(_maps_under(folder, name) for name in recorded_files):
        return str(folder)
    local = _python_files(folder)
    best: tuple[int, Path] | None = None
    for name in sorted(recorded_files):
        parts = _parts(name)
        for candidate in local.get(parts[-1] if parts else "", ()):
            length = _common_suffix(parts, candidate)
            root = candidate.parents[length - 1]
            if best is None or length > best[0]:
                best = (length, root)
    return str(best[1]) if best else str(folder)
