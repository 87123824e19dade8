"""The storing line's edit for `vramlens analyze`: the editor's quick fix (lsp/storing_fix.py) as a one-line
diff under the line to change (experiments/store_fix.py proves it safe on the file as it is here)."""

from __future__ import annotations

from vramlens.analysis.model import Analysis
from vramlens.experiments.store_fix import proven_store_edit


def store_diff(analysis: Analysis) -> tuple[str, str, str] | None:
    """(the storing line, the line edited, what the edit frees) for the first safe edit; None when none is."""
    proven = proven_store_edit(analysis)
    if proven is None:
        return None
    return proven.edit.before.strip(), proven.edit.after.strip(), proven.why
