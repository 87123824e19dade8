"""What a notebook capture adds to the text renderings: the cells in the order they ran, with the
allocated memory each left behind, and the memory the kernel itself keeps, with the command that
frees each. Shared by `vramlens analyze`, the report and the editor's report view."""

from __future__ import annotations

from vramlens.analysis.model import KernelHolder, NotebookFacts
from vramlens.units import format_bytes as fmt

MAX_CELLS_SHOWN = 30
KEPT_TITLE = "Held by the kernel itself"


def cells_title(facts: NotebookFacts) -> str:
    """The heading of the cells' rows, with the kernel that ran them when it is known."""
    kernel = f" ({facts.kernel})" if facts.kernel else ""
    return f"Cells of {facts.name}{kernel}, in the order they ran"


def holder_sentence(holder: KernelHolder, place=None) -> str:
    """``sys.last_traceback keeps 3.00 GiB that nothing else holds (locals of f at nb.ipynb cell 3 line 2); free it with: …``"""
    if holder.exclusive_bytes is None:
        amount = f"{fmt(holder.bytes)} (how much of it only there is not known)"
    elif holder.exclusive_bytes == holder.bytes:
        amount = f"{fmt(holder.bytes)} that nothing else holds"
    elif holder.exclusive_bytes == 0:
        amount = f"{fmt(holder.bytes)}, all of it held elsewhere too (freeing it alone frees nothing)"
    else:
        amount = f"{fmt(holder.bytes)}, {fmt(holder.exclusive_bytes)} of it held nowhere else"
    what = f" ({holder.what})" if holder.what else ""
    if holder.kind == "traceback" and holder.frames:
        where = ", ".join(f"{name} at {place(path, line) if place else f'{path}:{line}'} ({fmt(size)})"
                          for path, line, name, size in holder.frames[:3])
        what = f" (the locals of {where})"
    graph = f"; {fmt(holder.graph_bytes)} of it saved for backward by autograd graphs" if holder.graph_bytes else ""
    shared = f"; also held by {', '.join(holder.shared_with)}" if holder.shared_with else ""
    return f"{holder.root} keeps {amount}{what}{graph}{shared}. Free it with: {holder.free}"


def holder_lines(facts: NotebookFacts, place=None) -> list[str]:
    lines = [holder_sentence(holder, place) for holder in facts.holders]
    if facts.holders_note:
        lines.append(facts.holders_note)
    return lines


def cell_rows(facts: NotebookFacts, place=None) -> list[str]:
    """One row per execution, in order: where, outcome, and the allocated memory it added (or released)."""
    rows = []
    runs = [run for run in facts.runs if run.outcome != "before_recording"]
    for run in runs[-MAX_CELLS_SHOWN:]:
        label = place(run.code_name, None).rsplit(" line ", 1)[0] if place and run.code_name else f"In [{run.execution_count}]"
        count = f"[{run.execution_count}]" if run.execution_count is not None else "[ ]"
        change = ""
        if run.allocated_before is not None and run.allocated_after is not None:
            delta = run.allocated_after - run.allocated_before
            change = f"; allocated {fmt(run.allocated_after)} after it ({'+' if delta >= 0 else '−'}{fmt(abs(delta))})"
        outcome = "" if run.outcome == "ok" else f" — {run.outcome}"
        rows.append(f"{count} {label}{outcome}{change}")
    if len(runs) > MAX_CELLS_SHOWN:
        rows.insert(0, f"(the first {len(runs) - MAX_CELLS_SHOWN} executions are left out)")
    return rows
