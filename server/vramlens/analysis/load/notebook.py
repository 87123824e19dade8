"""A capture recorded in a Jupyter kernel: which recorded file names are cells, and which cells.

The kernel logs every cell it ran (capture.json ``notebook.cells``: source, the name its code ran
under, its execution number, and its place in the notebook when the runner knew it). Each cell's
place is found, in this order: as recorded; by the cell's id in the notebook file here; by its
source, when exactly one cell of that notebook has it. A cell whose place cannot be told keeps its
execution number (``In [7]``): a wrong cell would be worse than none.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from vramlens.analysis.model import CellRef
from vramlens.regular_files import FileProblem, read_regular_file

MAX_NOTEBOOK_BYTES = 200 * 2**20
VSCODE_CELL = "vscode-notebook-cell:"  # a cell URI used as a file name (VS Code's debugger compiles cells so)


@dataclass(frozen=True)
class CellRun:
    """One execution of one cell, as the kernel logged it."""

    code_name: str | None
    execution_count: int | None
    index: int | None  # 0-based among the notebook's cells (markdown included), when known
    cell_id: str | None
    source: str
    outcome: str  # ok | error | oom | interrupted | running
    allocated_before: int | None
    allocated_after: int | None

    @property
    def lines(self) -> list[str]:
        return self.source.splitlines()


@dataclass(frozen=True)
class KernelHolder:
    """Device memory the kernel itself keeps alive (``Out[3]``, ``_``, ``sys.last_traceback``)."""

    root: str
    kind: str  # output | last_output | traceback
    free: str  # the command that lets it go
    what: str
    bytes: int
    exclusive_bytes: int | None  # what nothing else holds: what the command frees; None when not known
    graph_bytes: int  # reached through autograd graphs (tensors saved for backward)
    tensors: int
    shared_with: list[str] = field(default_factory=list)
    frames: list[tuple[str, int, str, int]] = field(default_factory=list)  # (recorded file, line, function, bytes)


@dataclass
class NotebookFacts:
    """A notebook run's cells as the capture recorded them, with what its kernel keeps."""

    path: str | None  # the notebook as recorded
    local_path: str | None  # the notebook file here, when there is one
    kernel: str | None
    runs: list[CellRun]  # in execution order
    holders: list[KernelHolder]  # when the capture was written (after an OOM: what the failure left behind)
    holders_note: str | None = None
    holders_at_oom: list[KernelHolder] | None = None  # at the failing allocation itself, when recorded
    executions_dropped: int = 0
    _by_name: dict[str, CellRun] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return os.path.basename(self.path) if self.path else "the kernel"

    def run_of(self, code_name: str) -> CellRun | None:
        """The latest execution that ran under this name (a cell run again keeps its name)."""
        return self._by_name.get(code_name)

    def is_cell(self, code_name: str) -> bool:
        return code_name in self._by_name or code_name.startswith(VSCODE_CELL)

    def ref(self, code_name: str) -> CellRef | None:
        run = self._by_name.get(code_name)
        if run is None:
            if code_name.startswith(VSCODE_CELL):  # VS Code's own name for a cell its kernel ran: no place
                name = os.path.basename(code_name[len(VSCODE_CELL):].split("#", 1)[0]) or self.name
                return CellRef(label=f"{name} (a cell)", index=None, execution_count=None, notebook=None)
            return None
        if run.index is not None:
            label = f"{self.name} cell {run.index + 1}"
        else:
            label = f"{self.name} In [{run.execution_count}]" if run.execution_count is not None else f"{self.name} cell"
        return CellRef(label=label, index=run.index, execution_count=run.execution_count, notebook=self.local_path)

    def place(self, code_name: str, line: int | None) -> str | None:
        ref = self.ref(code_name)
        return None if ref is None else f"{ref.label} line {line}"

    def source_line(self, code_name: str, line: int | None) -> str | None:
        run = self._by_name.get(code_name)
        if run is None or not line or not 0 < line <= len(run.lines):
            return None
        return run.lines[line - 1].strip()


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value) -> str | None:
    return value if isinstance(value, str) else None


def notebook_cells(path: str | None) -> list[tuple[int, str | None, str]] | None:
    """(index, id, source) of every code cell of the notebook file, or None when it cannot be read."""
    if not path:
        return None
    try:  # a regular file only (a FIFO or a device never blocks), read no further than the bound
        data = json.loads(read_regular_file(path, MAX_NOTEBOOK_BYTES, "notebook").decode("utf-8"))
    except (FileProblem, ValueError, RecursionError):  # ValueError: not JSON, not UTF-8
        return None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        return None
    found = []
    for index, cell in enumerate(cells):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            source = "".join(s for s in source if isinstance(s, str)) if isinstance(source, list) else _text(source) or ""
            found.append((index, _text(cell.get("id")), source))
    return found


def _place(run: dict, cells: list[tuple[int, str | None, str]] | None) -> int | None:
    index = _int(run.get("index"))
    if index is not None and index >= 0:
        return index
    if not cells:
        return None
    cell_id = _text(run.get("cell_id"))
    if cell_id:
        for position, identifier, _source in cells:
            if identifier == cell_id:
                return position
    source = _text(run.get("source")) or ""
    same = [position for position, _identifier, text in cells if text == source]
    return same[0] if len(same) == 1 else None


def _holder(raw: dict) -> KernelHolder | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("root"), str) or _int(raw.get("bytes")) is None:
        return None
    frames = []
    for frame in raw.get("frames") or []:
        if isinstance(frame, dict) and isinstance(frame.get("filename"), str):
            frames.append((frame["filename"], _int(frame.get("line")) or 0, _text(frame.get("name")) or "?",
                           _int(frame.get("bytes")) or 0))
    return KernelHolder(
        root=raw["root"], kind=_text(raw.get("kind")) or "object", free=_text(raw.get("free")) or "",
        what=_text(raw.get("what")) or "", bytes=raw["bytes"], exclusive_bytes=_int(raw.get("exclusive_bytes")),
        graph_bytes=_int(raw.get("graph_bytes")) or 0, tensors=_int(raw.get("tensors")) or 0,
        shared_with=[name for name in raw.get("shared_with") or [] if isinstance(name, str)], frames=frames,
    )


def _holders(held: dict) -> list[KernelHolder]:
    items = held.get("holders") if isinstance(held.get("holders"), list) else []
    return [holder for holder in (_holder(item) for item in items) if holder is not None]


def read_notebook_facts(meta: dict, find_local) -> NotebookFacts | None:
    """The notebook block of capture.json, typed; None for a script's capture. ``find_local(path)``
    maps the recorded notebook path onto a file here (or None)."""
    raw = meta.get("notebook")
    if not isinstance(raw, dict):
        return None
    path = _text(raw.get("path"))
    local = find_local(path) if path else None
    cells = notebook_cells(local)
    runs = []
    for entry in raw.get("cells") or []:
        if not isinstance(entry, dict):
            continue
        runs.append(CellRun(
            code_name=_text(entry.get("code_name")), execution_count=_int(entry.get("execution_count")),
            index=_place(entry, cells), cell_id=_text(entry.get("cell_id")), source=_text(entry.get("source")) or "",
            outcome=_text(entry.get("outcome")) or "ok", allocated_before=_int(entry.get("allocated_before")),
            allocated_after=_int(entry.get("allocated_after")),
        ))
    held = raw.get("kernel_holders") if isinstance(raw.get("kernel_holders"), dict) else {}
    at_oom = raw.get("kernel_holders_at_oom")
    facts = NotebookFacts(path=path, local_path=local, kernel=_text(raw.get("kernel")), runs=runs, holders=_holders(held),
                          holders_note=_text(held.get("note")), executions_dropped=_int(raw.get("executions_dropped")) or 0,
                          holders_at_oom=_holders(at_oom) if isinstance(at_oom, dict) else None)
    for run in runs:
        if run.code_name:
            facts._by_name[run.code_name] = run
    return facts
