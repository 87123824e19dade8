"""The storing line's quick fix: the edits the census chose for what its holder keeps
(analysis/recommendations/store_edit.py), among them those the file proves safe (lint/engine/store_fixes.py),
as code actions on the line where the storing line is now.

The safety is proven on the document's current text, so an edit typed since the capture (a later
``torch.stack(losses).backward()``) takes the offer away; a storing line whose own text changed gets none.
"""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace import TextDocument

from vramlens.lint import apply_fix, store_fixes
from vramlens.lsp.capture_store import FileFigures
from vramlens.lsp.code_action_kit import to_workspace_edit
from vramlens.lsp.line_tracking import Anchor
from vramlens.safe_text import one_line


def storing_fix_actions(document: TextDocument, figures: FileFigures, anchor: Anchor | None,
                        requested: types.Range) -> list[types.CodeAction]:
    """The quick fixes of the storing line, when the requested range touches it; the surest first, preferred."""
    edit = figures.store_edit
    if edit is None or anchor is None or anchor.stale or anchor.gone:
        return []
    line = anchor.current
    if not requested.start.line <= line <= requested.end.line:
        return []
    why = {choice.method: choice.why for choice in edit.choices}
    found = store_fixes(document.source, line + 1, edit.target, [choice.method for choice in edit.choices])
    return [types.CodeAction(title=f"{fix.title}: {one_line(why[method])}{_measured(document, fix, line, figures)}",
                             kind=types.CodeActionKind.QuickFix, edit=to_workspace_edit(document, fix),
                             is_preferred=index == 0)
            for index, (method, fix) in enumerate(found)]


def _measured(document: TextDocument, fix, line: int, figures: FileFigures) -> str:
    """" (measured: the run with it fitted)" when a confirming run executed exactly this line."""
    if not figures.measured_edits:
        return ""
    fixed = apply_fix(document.source, fix)
    after = fixed.split("\n")[line].strip() if fixed is not None else None
    return " (measured: the run with it fitted)" if after in figures.measured_edits else ""

