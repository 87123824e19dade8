"""Text from a capture, a source file or a message, made safe to show: control characters are
written out (``\\x1b``, ``\\n``), never obeyed by a terminal, and never forge a line of our own.

- ``one_line`` for a value shown within one line (a file name, a function, a sentence, a note);
- ``printable`` for a block shown as lines (a traceback, a whole report), where newlines and tabs stay.

Bidirectional-override characters are written out too: they reorder what a reader sees. So are lone
surrogates (``\ud800`` in a JSON string, a file name that is not UTF-8): no encoder can write them.
Used at the edges only: the CLI's output, the report, and the language server's messages.
"""

from __future__ import annotations

import re

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_SURROGATES = "\ud800-\udfff"
_IN_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}\u2028\u2029{_SURROGATES}]")
_IN_BLOCK = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\u2028\u2029{_SURROGATES}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _written_out(match: re.Match) -> str:
    char = match.group(0)
    named = _NAMED.get(char)
    if named:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(value) -> str:
    """``value`` as text that stays on one line and carries no control character."""
    text = value if isinstance(value, str) else str(value)
    return text if text.isprintable() else _IN_LINE.sub(_written_out, text)


def printable(value) -> str:
    """``value`` as text whose only control characters are its newlines and tabs."""
    text = value if isinstance(value, str) else str(value)
    return _IN_BLOCK.sub(_written_out, text)
