"""The ``notebook`` section of a capture recorded in a Jupyter kernel, checked at the boundary.

The analysis reads it leniently (a field of the wrong type is unknown); what is checked here is
the shape that would make it misleading or costly: not an object, cells that are not a list of
objects, more executions or text than the agent ever writes.
"""

from __future__ import annotations

import math
from pathlib import Path

from vramlens.capture.errors import CaptureError

MAX_EXECUTIONS = 10_000  # the agent keeps 2,000
MAX_SOURCE_CHARS = 1_000_000  # the agent keeps 200,000 per cell
MAX_NUMBER = 1 << 56  # no size, count, line or time the agent writes is negative or larger
MAX_LISTED = 5  # fields named in the note; more are counted
MAX_DEPTH = 12  # the agent's section is 5 deep; deeper is not read


def clean_notebook(section: object, meta_path: Path) -> tuple[object, list[str]]:
    """The section checked (check_notebook), with every number out of range (negative, beyond
    MAX_NUMBER, NaN) read as unknown (null), and a note naming them."""
    check_notebook(section, meta_path)
    if section is None:
        return None, []
    wrong: list[str] = []
    clean = _numbers_in_range(section, "notebook", wrong, 0)
    if not wrong:
        return clean, []
    listed = ", ".join(wrong[:MAX_LISTED]) + (f" and {len(wrong) - MAX_LISTED} more" if len(wrong) > MAX_LISTED else "")
    return clean, [f"capture.json: numbers out of range in the notebook section were read as unknown: {listed}."]


def _numbers_in_range(value, where: str, wrong: list[str], depth: int):
    if type(value) in (int, float):
        if (type(value) is float and not math.isfinite(value)) or not 0 <= value <= MAX_NUMBER:
            wrong.append(where)
            return None
        return value
    if depth > MAX_DEPTH:
        return None
    if type(value) is dict:
        return {key: _numbers_in_range(item, f"{where}.{key}", wrong, depth + 1) for key, item in value.items()}
    if type(value) is list:
        return [_numbers_in_range(item, f"{where}[{index}]", wrong, depth + 1) for index, item in enumerate(value)]
    return value


def check_notebook(section: object, meta_path: Path) -> None:
    if section is None:
        return
    where = f"{meta_path} (its notebook section)"
    if not isinstance(section, dict):
        raise CaptureError(f"{where} is not an object: the capture is damaged.")
    cells = section.get("cells", [])
    if not isinstance(cells, list) or not all(isinstance(cell, dict) for cell in cells):
        raise CaptureError(f"{where} lists its cells in a shape no vramlens writes: the capture is damaged.")
    if len(cells) > MAX_EXECUTIONS:
        raise CaptureError(f"{where} lists {len(cells)} cell executions, more than vramlens ever records ({MAX_EXECUTIONS}).")
    for cell in cells:
        source = cell.get("source", "")
        if not isinstance(source, str) or len(source) > MAX_SOURCE_CHARS:
            raise CaptureError(f"{where} holds a cell whose source is not text of at most {MAX_SOURCE_CHARS} characters.")
        name = cell.get("code_name")
        if name is not None and not isinstance(name, str):
            raise CaptureError(f"{where} holds a cell whose code name is not text: the capture is damaged.")
