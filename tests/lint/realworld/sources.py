"""Reading pinned files out of local git clones of public repositories.

A clone folder holds one clone per repository, named ``owner+name`` (``owner/name`` also works); each may be a
bare git directory or a clone with a work tree. Nothing here touches the network.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


class MissingSource(Exception):
    """A repository or commit the corpus needs is not in the clone folder."""


def git_dir(clones: Path, repo: str) -> Path:
    owner, name = repo.split("/", 1)
    for base in (clones / f"{owner}+{name}", clones / owner / name, clones / owner / f"{name}.git"):
        for candidate in (base, base / "repo", base / ".git", base / "repo" / ".git"):
            if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
                return candidate
    raise MissingSource(f"no clone of {repo} under {clones} (expected a folder named {owner}+{name})")


def _git(directory: Path, *args: str) -> bytes:
    done = subprocess.run(["git", f"--git-dir={directory}", *args], capture_output=True)
    if done.returncode != 0:
        raise MissingSource(f"git {' '.join(args)} failed in {directory}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def read_blob(directory: Path, commit: str, path: str) -> bytes:
    return _git(directory, "show", f"{commit}:{path}")


def list_files(directory: Path, commit: str) -> list[str]:
    """Every regular file path of the commit's tree (sorted, as git lists them); symlinks and submodules are
    left out, since their blobs are link targets or nothing."""
    out = _git(directory, "ls-tree", "-r", "-z", commit).decode("utf-8", errors="surrogateescape")
    files = []
    for entry in filter(None, out.split("\0")):
        meta, path = entry.split("\t", 1)
        if meta.split()[0] in ("100644", "100755"):
            files.append(path)
    return files


def read_blobs(directory: Path, commit: str, paths: list[str]) -> dict[str, bytes]:
    """Many files of one commit through a single ``git cat-file --batch``."""
    request = "".join(f"{commit}:{p}\n" for p in paths).encode("utf-8", errors="surrogateescape")
    out = subprocess.run(["git", f"--git-dir={directory}", "cat-file", "--batch"], input=request,
                         capture_output=True, check=True).stdout
    blobs, pos = {}, 0
    for path in paths:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        if len(header) != 3:
            raise MissingSource(f"{path} is missing at {commit} in {directory}")
        size = int(header[2])
        blobs[path] = out[end + 1:end + 1 + size]
        pos = end + 1 + size + 1
    return blobs
