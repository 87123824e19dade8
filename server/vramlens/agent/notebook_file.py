"""A notebook file read with the standard library: its code cells, in order, with their place.

``.ipynb`` is JSON (nbformat 4): ``cells`` holds every cell, markdown ones included, and a code
cell's ``source`` is a string or a list of strings. A cell's place is its index among all cells,
which is how the editor's notebook view counts them too.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass

MAX_NOTEBOOK_BYTES = 200 * 2**20  # outputs can be large; a file beyond this is refused, not read


class NotebookError(ValueError):
    """The file cannot be run as a notebook; the message is one sentence for the user."""


@dataclass(frozen=True)
class CodeCell:
    index: int  # among all the notebook's cells, from 0
    cell_id: str | None
    source: str


def cell_source(cell: dict) -> str | None:
    """The cell's text; None when its source is not text (nor a list of texts)."""
    source = cell.get("source", "")
    if isinstance(source, list):
        return "".join(source) if all(isinstance(part, str) for part in source) else None
    return source if isinstance(source, str) else None


def _read_json(path: str, name: str):
    # A regular file only (a FIFO or a device would block or never end), opened without blocking.
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise NotebookError(f"Notebook not found: {path}.") from None
    except OSError as error:
        raise NotebookError(f"{name} cannot be read ({error.strerror}).") from None
    if not stat.S_ISREG(info.st_mode):
        raise NotebookError(f"{name} is not a regular file, so it is not read as a notebook.")
    if info.st_size > MAX_NOTEBOOK_BYTES:
        raise NotebookError(f"{name} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB; clear its outputs first.")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise NotebookError(f"{name} is not a regular file, so it is not read as a notebook.")
            data = handle.read(MAX_NOTEBOOK_BYTES + 1)
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise NotebookError(f"{name} is nested too deeply to be a notebook.") from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise NotebookError(f"{name} is not a readable notebook ({type(error).__name__}: {str(error)[:200]}).") from None


def read_notebook(path: str) -> list[CodeCell]:
    name = os.path.basename(path)
    data = _read_json(path, name)
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        if isinstance(data, dict) and "worksheets" in data:
            raise NotebookError(f"{name} is in the old notebook format 3; open and save it in Jupyter to upgrade it.")
        raise NotebookError(f"{name} is not a Jupyter notebook (no list of cells).")
    cells, not_text = [], []
    for index, cell in enumerate(data["cells"]):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            cell_id = cell.get("id")
            source = cell_source(cell)
            if source is None:
                not_text.append(index + 1)
                continue
            cells.append(CodeCell(index, cell_id if isinstance(cell_id, str) else None, source))
    if not_text:  # running the others would run a different program than the notebook's
        listed = ", ".join(map(str, not_text[:5])) + (f" and {len(not_text) - 5} more" if len(not_text) > 5 else "")
        raise NotebookError(f"{name} is damaged: the source of code cell{'s' if len(not_text) > 1 else ''} {listed} "
                            "is not text, so the notebook is not run.")
    return cells
