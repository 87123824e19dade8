"""The ``notebook`` section of a capture recorded in a Jupyter kernel, checked at the boundary.

The analysis reads it leniently (a field of the wrong type is unknown); what is checked here is
the shape that would make it misleading or costly: not an object, cells that are not a list of
objects, more executions or text than the agent ever writes.
"""

from __future__ import annotations

from pathlib import Path

from vramlens.capture.errors import CaptureError

MAX_EXECUTIONS = 10_000  # the agent keeps 2,000
MAX_SOURCE_CHARS = 1_000_000  # the agent keeps 200,000 per cell


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
