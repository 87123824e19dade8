"""Building the exact text edits the fixes are made of.

The AST counts columns in UTF-8 bytes; findings and edits count characters, so every
position goes through ``Positions`` before it leaves the linter.
"""

from __future__ import annotations

import ast
import re
from functools import cached_property

from ..findings import Edit
from .syntax import iter_nodes, leading_indent

INDENT_UNIT = "    "
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant, ast.List, ast.Tuple, ast.Dict)


class Positions:
    def __init__(self, text: str) -> None:
        self.text = text

    @cached_property
    def lines(self) -> list[str]:
        """Split on first use only: most files report nothing."""
        # Only \r\n, \r and \n end lines for the tokenizer; str.splitlines also splits on \f and others.
        return _LINE_BREAK.split(self.text)

    def line(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""

    def char_column(self, lineno: int, byte_column: int) -> int:
        line = self.line(lineno)
        if line.isascii():
            return byte_column
        return len(line.encode("utf-8")[:byte_column].decode("utf-8", errors="replace"))

    def start(self, node: ast.AST) -> tuple[int, int]:
        return node.lineno, self.char_column(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> tuple[int, int]:
        return node.end_lineno, self.char_column(node.end_lineno, node.end_col_offset)

    def segment(self, node: ast.AST) -> str:
        """The source text of ``node`` (``ast.get_source_segment`` re-splits the whole file each call)."""
        line, column = self.start(node)
        end_line, end_column = self.end(node)
        if line == end_line:
            return self.line(line)[column:end_column]
        parts = [self.line(line)[column:], *self.lines[line : end_line - 1], self.line(end_line)[:end_column]]
        return "\n".join(parts)


def insert_after(positions: Positions, node: ast.AST, text: str) -> Edit:
    line, column = positions.end(node)
    return Edit(line, column, line, column, text)


def detach_edits(positions: Positions, expr: ast.AST, method: str = "detach") -> tuple[Edit, ...]:
    """Turn ``expr`` into ``expr.detach()`` (parenthesised when it is not an atom)."""
    if isinstance(expr, _ATOMS) and not isinstance(expr, ast.Tuple):
        return (insert_after(positions, expr, f".{method}()"),)
    line, column = positions.start(expr)
    return (Edit(line, column, line, column, "("), insert_after(positions, expr, f").{method}()"))


def replace_node(positions: Positions, node: ast.AST, new_text: str) -> Edit:
    line, column = positions.start(node)
    end_line, end_column = positions.end(node)
    return Edit(line, column, end_line, end_column, new_text)


def insert_line_above(positions: Positions, lineno: int, text: str) -> Edit:
    """A new line holding ``text`` above ``lineno``, indented like that line."""
    indent = leading_indent(positions.line(lineno))
    return Edit(lineno, 0, lineno, 0, f"{indent}{text}\n")


def spans_multiline_string(node: ast.AST) -> bool:
    """Re-indenting would change the value of a string that spans lines."""
    for child in iter_nodes(node):
        is_string = isinstance(child, ast.JoinedStr) or (
            isinstance(child, ast.Constant) and isinstance(child.value, (str, bytes))
        )
        if is_string and (child.end_lineno or child.lineno) > child.lineno:
            return True
    return False


def wrap_in_with(positions: Positions, stmt: ast.stmt, header: str) -> Edit | None:
    """Put ``stmt`` inside ``with <header>:`` by indenting its lines one level; None when unsafe."""
    if spans_multiline_string(stmt):
        return None
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    if stmt.col_offset != len(leading_indent(positions.line(first)).encode("utf-8")):
        return None  # shares its line with something else (``if x: stmt``)
    indent = leading_indent(positions.line(first))
    body = [
        (INDENT_UNIT + line) if line.strip() else line
        for line in positions.lines[first - 1 : last]
    ]
    new_text = f"{indent}with {header}:\n" + "\n".join(body)
    return Edit(first, 0, last, len(positions.line(last)), new_text)
