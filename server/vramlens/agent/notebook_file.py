"""A notebook file read with the standard library: its code cells, in order, with their place.

``.ipynb`` is JSON (nbformat 4): ``cells`` holds every cell, markdown ones included, and a code
cell's ``source`` is a string or a list of strings. A cell's place is its index among all cells,
which is how the editor's notebook view counts them too.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

MAX_NOTEBOOK_BYTES = 200 * 2**20  # outputs can be large; a file beyond this is refused, not read


class NotebookError(ValueError):
    """The file cannot be run as a notebook; the message is one sentence for the user."""


@dataclass(frozen=True)
class CodeCell:
    index: int  # among all the notebook's cells, from 0
    cell_id: str | None
    source: str


def cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        return "".join(part for part in source if isinstance(part, str))
    return source if isinstance(source, str) else ""


def read_notebook(path: str) -> list[CodeCell]:
    name = os.path.basename(path)
    try:
        if os.path.getsize(path) > MAX_NOTEBOOK_BYTES:
            raise NotebookError(f"{name} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB; clear its outputs first.")
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise NotebookError(f"Notebook not found: {path}.") from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise NotebookError(f"{name} is not a readable notebook ({type(error).__name__}: {error}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        if isinstance(data, dict) and "worksheets" in data:
            raise NotebookError(f"{name} is in the old notebook format 3; open and save it in Jupyter to upgrade it.")
        raise NotebookError(f"{name} is not a Jupyter notebook (no list of cells).")
    cells = []
    for index, cell in enumerate(data["cells"]):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            cell_id = cell.get("id")
            cells.append(CodeCell(index, cell_id if isinstance(cell_id, str) else None, cell_source(cell)))
    return cells
