"""The storing line's edit for `vramlens analyze`: the editor's quick fix (lsp/storing_fix.py) as a one-line
diff under the line to change, the same choice (analysis/recommendations/store_edit.py) and the same proof of
safety (lint/engine/store_fixes.py) on the file as it is here."""

from __future__ import annotations

from vramlens.analysis.model import Analysis
from vramlens.analysis.recommendations.store_edit import store_edit
from vramlens.regular_files import FileProblem, read_text_file


def store_diff(analysis: Analysis) -> tuple[str, str, str] | None:
    """(the storing line, the line edited, what the edit frees) for the first safe edit; None when none is."""
    edit = store_edit(analysis.diagnosis.cause, analysis.storing, analysis.holders)
    storing = analysis.storing[0] if edit is not None else None
    if storing is None or not storing.local_path or storing.cell is not None:
        return None
    # The lint engine only where there is an edit to prove: most analyses have none, and `analyze` starts faster.
    from vramlens.lint import apply_fix, store_fixes
    from vramlens.lint.parse.source import SOURCE_LIMIT

    try:  # a regular file only, bounded, as the editor reads it
        text = read_text_file(storing.local_path, SOURCE_LIMIT, "source file")
    except FileProblem:
        return None
    found = store_fixes(text, edit.line, edit.target, [choice.method for choice in edit.choices])
    fixed = apply_fix(text, found[0][1]) if found else None
    if fixed is None:
        return None
    why = next(choice.why for choice in edit.choices if choice.method == found[0][0])
    # the edit inserts on the storing line only: it keeps its number
    return text.split("\n")[edit.line - 1].strip(), fixed.split("\n")[edit.line - 1].strip(), why
