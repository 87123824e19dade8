"""What every code action needs: the engine's positions in the client's encoding, a fix as a workspace edit,
and whether the client asks for a kind of action (lint's quick fixes and fix-all, the storing line's fix)."""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace import TextDocument

from vramlens.lint import Fix


def client_range(document: TextDocument, line: int, column: int, end_line: int, end_column: int,
                 lines: list[str] | None = None) -> types.Range:
    """Engine positions (1-based lines, code-point columns) to the client's position encoding.
    ``lines``: the document's lines, when many ranges are converted (pygls splits the text on every ask)."""
    server_range = types.Range(
        start=types.Position(line=line - 1, character=column),
        end=types.Position(line=end_line - 1, character=end_column),
    )
    return document.position_codec.range_to_client_units(lines or document.lines, server_range)


def to_workspace_edit(document: TextDocument, fix: Fix) -> types.WorkspaceEdit:
    lines = document.lines
    edits = [types.TextEdit(range=client_range(document, e.line, e.column, e.end_line, e.end_column, lines),
                            new_text=e.new_text)
             for e in fix.edits]
    return types.WorkspaceEdit(changes={document.uri: edits})


def asks_for(only: list | None, kind: str) -> bool:
    """Whether a request's ``only`` (absent: every kind) asks for ``kind``; LSP kinds are hierarchical, so
    ``only: ["source"]`` asks for ``source.fixAll.vramlens`` too."""
    if only is None:
        return True
    return any(kind == requested or kind.startswith(requested + ".")
               for requested in (str(getattr(k, "value", k)) for k in only))
