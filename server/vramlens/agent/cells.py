"""The cells a kernel executed, in the order it executed them, with the file name their code ran under.

Frames of cell code carry a made-up file name: ``<ipython-input-4-1a2b3c>`` in plain IPython,
``/tmp/ipykernel_<pid>/<hash>.py`` in ipykernel (the hash of the cell's text, so a cell run again
keeps its name), or a front end's own name such as a ``vscode-notebook-cell:`` URI. Keeping each
execution's source and name in the capture is what lets the analysis put a frame back on its cell
and line long after the kernel is gone.
"""

from __future__ import annotations

import linecache
import time

MAX_SOURCE_CHARS = 200_000  # one cell's text kept; a cell longer than this is cut (its lines still count)
MAX_EXECUTIONS = 2000  # a long session keeps its latest executions
INDEX_KEY = "vramlens_cell_index"  # execute_request metadata: the cell's position, when a runner knows it


def code_name_of(shell, raw_cell: str, count_hint: int | None) -> tuple[str | None, int | None]:
    """The file name under which the shell compiled this cell, and the cell's execution number.

    ``count_hint`` is the shell's counter while the cell runs, which IPython releases differ on
    (already advanced, or not yet): the name the compiler really cached tells which it was."""
    compiler = getattr(shell, "compile", None)
    cached = getattr(compiler, "_filename_map", None)
    cached = cached if isinstance(cached, dict) else {}
    try:
        transformed = shell.transform_cell(raw_cell)
    except Exception:
        transformed = raw_cell
    candidates = [count_hint, count_hint - 1] if isinstance(count_hint, int) else [count_hint]
    for number in candidates:
        try:
            name = compiler.get_code_name(raw_cell, transformed, number)
        except Exception:  # an IPython without it: the frames cannot be mapped, the run goes on
            return None, count_hint
        if cached.get(name) == number or not cached:
            return name, number
    return None, count_hint


class CellLog:
    """Every cell execution while recording: what ran, under which name, how it ended."""

    def __init__(self, torch=None, device: int = 0):
        self.executions: list[dict] = []
        self.dropped = 0
        self._current: dict | None = None
        self._torch, self._device = torch, device

    def bind(self, torch, device: int) -> None:
        self._torch, self._device = torch, device

    def started(self, raw_cell: str, execution_count: int | None, cell_id: str | None, cell_meta: dict | None) -> None:
        index = (cell_meta or {}).get(INDEX_KEY) if isinstance(cell_meta, dict) else None
        source = raw_cell if isinstance(raw_cell, str) else ""
        self._current = {
            "execution_count": execution_count,
            "code_name": None,
            "cell_id": cell_id if isinstance(cell_id, str) else None,
            "index": index if isinstance(index, int) and not isinstance(index, bool) and index >= 0 else None,
            "source": source[:MAX_SOURCE_CHARS],
            "source_truncated": len(source) > MAX_SOURCE_CHARS,
            "started_epoch": time.time(),
            "ended_epoch": None,
            "outcome": "running",
            "allocated_before": self._allocated(),
            "allocated_after": None,
        }
        self._append(self._current)

    def finished(self, code_name: str | None, outcome: str) -> None:
        """``outcome``: ok | error | oom | interrupted."""
        current = self._current
        if current is None:
            return
        current.update(code_name=code_name, ended_epoch=time.time(), outcome=outcome,
                       allocated_after=self._allocated())
        self._current = None

    def add_earlier(self, shell) -> int:
        """Cells the kernel ran before recording began: functions they define run later under their
        names, so those names must map too. Their source is the history's (or the compiled text)."""
        compiler = getattr(shell, "compile", None)
        cached = getattr(compiler, "_filename_map", None)
        if not isinstance(cached, dict):
            return 0
        history = (getattr(shell, "user_ns", {}) or {}).get("In")
        history = history if isinstance(history, list) else []
        known = self.known_names()
        added = 0
        for name, number in sorted(cached.items(), key=lambda item: item[1] if isinstance(item[1], int) else 0):
            if name in known or not isinstance(number, int):
                continue
            if not (0 < number < len(history) and isinstance(history[number], str)):
                continue  # a silent execution (a front end's own code), not a cell of the notebook
            source = history[number]
            self._append({
                "execution_count": number, "code_name": name, "cell_id": None, "index": None,
                "source": source[:MAX_SOURCE_CHARS], "source_truncated": len(source) > MAX_SOURCE_CHARS,
                "started_epoch": None, "ended_epoch": None, "outcome": "before_recording",
                "allocated_before": None, "allocated_after": None,
            })
            added += 1
        return added

    def running(self) -> dict | None:
        return self._current

    def name_running_cell(self, code_name: str) -> None:
        """A cell magic learns its cell's name before the cell ends (its body runs under that name)."""
        if self._current is not None and self._current["code_name"] is None:
            self._current["code_name"] = code_name

    def known_names(self) -> set[str]:
        return {entry["code_name"] for entry in self.executions if entry["code_name"]}

    def to_json(self) -> list[dict]:
        return [dict(entry) for entry in self.executions]

    def _append(self, entry: dict) -> None:
        self.executions.append(entry)
        if len(self.executions) > MAX_EXECUTIONS:
            del self.executions[0]
            self.dropped += 1

    def _allocated(self) -> int | None:
        torch = self._torch
        if torch is None:
            return None
        try:
            return int(torch.cuda.memory_allocated(self._device))
        except Exception:
            return None


def show_raw_source_in_tracebacks(code_name: str, raw_cell: str) -> None:
    """A cell magic compiles the cell's body under the cell's own name: let tracebacks show the cell's
    own lines (IPython cached the one-line call to the magic under that name)."""
    lines = [line + "\n" for line in raw_cell.splitlines()]
    linecache.cache[code_name] = (len(raw_cell), None, lines, code_name)
