"""The project root of a command line's paths: the folder below which imports are looked up."""

from __future__ import annotations

import os
from typing import Iterable


def project_root(paths: Iterable[str | os.PathLike]) -> str | None:
    """The folder all ``paths`` lie in (a file's own folder), or, when that folder is part of a package (it holds
    an ``__init__.py``), the nearest folder above it that is not: ``import pkg.models`` resolves from there.
    None when no path names an existing file or folder."""
    folders = []
    for raw in paths:
        path = os.path.realpath(raw)
        if os.path.isdir(path):
            folders.append(path)
        elif os.path.exists(path):
            folders.append(os.path.dirname(path))
    if not folders:
        return None
    root = os.path.commonpath(folders)
    while os.path.isfile(os.path.join(root, "__init__.py")):
        parent = os.path.dirname(root)
        if parent == root:
            break
        root = parent
    return root
