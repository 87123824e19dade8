"""The storing line's quick fix: the edits the census chose for what its holder keeps
(analysis/recommendations/store_edit.py), among them those the file proves safe (lint/engine/store_fixes.py),
as code actions on the line where the storing line is now.

The safety is proven on the document's current text, so an edit typed since the capture (a later
``torch.stack(losses).backward()``) takes the offer away; a storing line whose own text changed gets none.
"""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace import TextDocument

from vramlens.lint import Fix, store_fixes
from vramlens.lsp.capture_store import FileFigures
from vramlens.lsp.line_tracking import Anchor
from vramlens.safe_text import one_line


def wants_quick_fixes(only: list | None) -> bool:
    """Whether the client asks for quick fixes (``only`` absent, or naming ``quickfix`` or a kind above it)."""
    if only is None:
        return True
    wanted = types.CodeActionKind.QuickFix.value
    return any(wanted == kind or wanted.startswith(kind + ".") for kind in (str(getattr(k, "value", k)) for k in only))


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
    return [types.CodeAction(title=f"{fix.title}: {one_line(why[method])}", kind=types.CodeActionKind.QuickFix,
                             edit=_workspace_edit(document, fix), is_preferred=index == 0)
            for index, (method, fix) in enumerate(found)]


def _workspace_edit(document: TextDocument, fix: Fix) -> types.WorkspaceEdit:
    """The fix's edits (1-based lines, code-point columns) in the client's position encoding."""
    lines = document.lines
    edits = [types.TextEdit(range=document.position_codec.range_to_client_units(lines, types.Range(
                 start=types.Position(line=e.line - 1, character=e.column),
                 end=types.Position(line=e.end_line - 1, character=e.end_column))), new_text=e.new_text)
             for e in fix.edits]
    return types.WorkspaceEdit(changes={document.uri: edits})
