"""A folder of ranks' captures (`vramlens run --torchrun`): found wherever they lie below it.

Every rank writes ``rank-<RANK>/`` with its place in the job in ``capture.json`` (``distributed``).
The folders of a multi-node job may have been written on several machines and copied side by side
in any layout, so ranks are told apart by what their capture says, never by where it is.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from vramlens.capture.errors import CaptureError
from vramlens.capture.format import FORMAT_NAME, META_FILE
from vramlens.capture.meta_shape import check_meta
from vramlens.regular_files import FileProblem, read_regular_file

MAX_DEPTH = 6  # OUT/node0/rank-3 is two levels down; leave room for folders of runs copied together
MAX_FOLDERS = 10_000  # folders looked into at most: `analyze /` ends, and says where it stopped
META_LIMIT = 64 << 20


@dataclass
class RankCaptures:
    """The capture folders of one distributed job's ranks, found under one folder."""

    folders: dict[int, Path]  # rank -> its capture folder
    metas: dict[int, dict]
    world_size: int | None
    missing: list[int] = field(default_factory=list)  # ranks of the job that wrote no capture here
    notes: list[str] = field(default_factory=list)


def _read_meta(folder: Path) -> dict | None:
    """The checked facts of the capture in ``folder`` (capture/meta_shape.py), or None when it holds none."""
    try:
        meta = json.loads(read_regular_file(folder / META_FILE, META_LIMIT, "capture.json").decode("utf-8"))
    except (FileProblem, ValueError, RecursionError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        return None
    return check_meta(meta)[0]


def _rank_of(meta: dict) -> int | None:
    rank = (meta.get("distributed") or {}).get("rank")
    return rank if isinstance(rank, int) and rank >= 0 else None


class _Walk:
    """The folders below one folder, each looked into once (symbolic links may loop), at most
    MAX_DEPTH levels down and MAX_FOLDERS in all."""

    def __init__(self):
        self.visited: set[tuple[int, int]] = set()
        self.folders = 0
        self.cut = False

    def first_visit(self, path: Path) -> bool:
        try:
            info = os.stat(path)
        except OSError:
            return False
        key = (info.st_dev, info.st_ino)
        if key in self.visited:
            return False
        self.visited.add(key)
        return True

    def subfolders(self, folder: Path) -> list[Path]:
        self.folders += 1
        if self.folders > MAX_FOLDERS:
            self.cut = True
            return []
        try:
            with os.scandir(folder) as entries:
                names = sorted(entry.name for entry in entries if not entry.name.startswith(".") and _is_folder(entry))
        except OSError:
            return []
        return [folder / name for name in names]


def _is_folder(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _candidates(folder: Path, walk: _Walk | None = None, depth: int = 0):
    """(folder, meta) of every rank capture below ``folder``; staging folders (hidden) are skipped."""
    walk = walk or _Walk()
    if depth == 0:
        walk.first_visit(folder)
    for entry in walk.subfolders(folder):
        if walk.cut:
            return
        if not walk.first_visit(entry):
            continue
        meta = _read_meta(entry) if os.path.lexists(entry / META_FILE) else None
        if meta is not None:
            if _rank_of(meta) is not None:
                yield entry, meta
        elif depth + 1 < MAX_DEPTH:
            yield from _candidates(entry, walk, depth + 1)


def holds_rank_captures(folder: Path) -> bool:
    """True for a folder that is not itself a capture but has ranks' captures below it."""
    folder = Path(folder)
    return folder.is_dir() and not (folder / META_FILE).exists() and next(_candidates(folder), None) is not None


def _job_of(meta: dict) -> tuple:
    facts = meta.get("distributed") or {}
    return facts.get("job_id"), facts.get("master_addr"), facts.get("master_port"), facts.get("world_size")


def _ended(meta: dict) -> float:
    return meta.get("ended_epoch") or (meta.get("started_epoch") or 0.0) + (meta.get("duration_s") or 0.0)


def find_rank_captures(folder: str | Path) -> RankCaptures:
    """One capture per rank of the latest job below ``folder``, with notes on what was left out."""
    folder = Path(folder)
    walk = _Walk()
    found = list(_candidates(folder, walk))
    if not found:
        raise CaptureError(f"{folder} holds no ranks' captures (rank-<N> folders written by `vramlens run --torchrun`).")
    notes = []
    if walk.cut:
        notes.append(f"Stopped looking for ranks' captures below {folder} after {MAX_FOLDERS:,} folders; "
                     "point at the folder of the launch to see them all.")
    jobs: dict[tuple, list] = {}
    for path, meta in found:
        jobs.setdefault(_job_of(meta), []).append((path, meta))
    job = max(jobs, key=lambda key: max(_ended(meta) for _, meta in jobs[key]))
    if len(jobs) > 1:
        others = sum(len(entries) for key, entries in jobs.items() if key != job)
        notes.append(f"{others} capture{'s' if others != 1 else ''} from {len(jobs) - 1} other launch"
                     f"{'es' if len(jobs) > 2 else ''} below {folder.name} left out; only the latest launch is compared.")
    folders: dict[int, Path] = {}
    metas: dict[int, dict] = {}
    for path, meta in sorted(jobs[job], key=lambda item: _ended(item[1])):
        rank = _rank_of(meta)
        if rank in folders:
            notes.append(f"Rank {rank} has more than one capture ({folders[rank]} and {path}); the later one is used.")
        folders[rank], metas[rank] = path, meta
    world_size = job[3] if isinstance(job[3], int) else None
    missing = [rank for rank in range(world_size or 0) if rank not in folders]
    if missing:
        listed = ", ".join(map(str, missing))
        notes.append(f"No capture of rank{'s' if len(missing) > 1 else ''} {listed} (of {world_size}): killed before it "
                     "could write one, or its node's folder is not here.")
    return RankCaptures(folders=folders, metas=metas, world_size=world_size, missing=missing, notes=notes)
