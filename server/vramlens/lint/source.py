"""A source file as the linter reads it: its bytes (a regular file, within a size), its text the way
Python itself would decode it, and the sentence for what went wrong, without ever raising.

A linted folder may hold a FIFO or a device named ``*.py`` (reading would block or never end), a
dangling symbolic link, a file of tens of megabytes (generated code nobody edits), or a coding
cookie naming a codec that is not a text encoding. Each becomes one VL000 finding that says so,
and the other files are checked as usual.
"""

from __future__ import annotations

import codecs
import io
import os
import tokenize
from dataclasses import dataclass

from vramlens.regular_files import FileProblem, human_size, read_regular_file

_UTF8_BOM = codecs.BOM_UTF8
SOURCE_LIMIT = 10 << 20  # files (and editor documents) larger than this are not checked (docs/lint.md)


@dataclass(frozen=True)
class DecodedSource:
    text: str
    encoding: str
    bom: bool
    problem: str | None  # None when the bytes decoded cleanly; else what follows "this file " in a sentence

    def encode(self, text: str) -> bytes:
        """Encode edited text back the way the file was stored (same encoding, same BOM)."""
        data = text.encode(self.encoding)
        return _UTF8_BOM + data if self.bom else data


def read_source(path: str | os.PathLike) -> bytes:
    """The file's bytes; FileProblem (one sentence) for anything that is not a readable regular file
    of at most SOURCE_LIMIT bytes."""
    return read_regular_file(path, SOURCE_LIMIT, "source file for lint")


def too_large(size: int) -> str | None:
    """The sentence for a text too large to check (an open editor document), or None."""
    if size <= SOURCE_LIMIT:
        return None
    return (f"this file is {human_size(size)}, more than the {human_size(SOURCE_LIMIT)} vramlens lint checks "
            "(generated code?); nothing was checked.")


def _replaced(data: bytes, problem: str) -> DecodedSource:
    text = data.decode("utf-8", errors="replace")
    return DecodedSource(text.lstrip("\ufeff"), "utf-8", data.startswith(_UTF8_BOM),
                         f"{problem}; it was read as UTF-8 with undecodable bytes replaced, and checked")


def decode_source(data: bytes) -> DecodedSource:
    """Honour a BOM and a PEP 263 coding cookie; undecodable bytes are replaced, never raised."""
    bom = data.startswith(_UTF8_BOM)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        info = codecs.lookup(encoding)
    except SyntaxError as error:  # unknown or conflicting coding cookie, or undecodable first lines
        return _replaced(data, f"has an encoding declaration Python cannot use ({error.msg or error})")
    except LookupError as error:
        return _replaced(data, f"declares an encoding Python does not know ({error})")
    if not getattr(info, "_is_text_encoding", True):
        return _replaced(data, f"declares the encoding {encoding!r}, which is a codec but not a text encoding")
    if encoding == "utf-8-sig":
        encoding = "utf-8"
        data = data[len(_UTF8_BOM):] if bom else data
    try:
        text, problem = data.decode(encoding), None
    except UnicodeDecodeError as error:
        text = data.decode(encoding, errors="replace")
        problem = f"has bytes that are not valid {encoding} at offset {error.start}; they were replaced before checking"
    except LookupError as error:  # a codec that fails only when used
        return _replaced(data, f"declares the encoding {encoding!r}, which cannot decode it ({error})")
    return DecodedSource(text, encoding, bom, problem)


def parse_failure(error: BaseException) -> tuple[str, int, int]:
    """(message, line, column) of the finding for an error ``ast.parse`` raised: a sentence, never an empty one."""
    if isinstance(error, SyntaxError):
        what = (error.msg or "").strip() or "invalid syntax"
        line = error.lineno if isinstance(error.lineno, int) and error.lineno > 0 else None
        column = error.offset - 1 if isinstance(error.offset, int) and error.offset > 0 else 0
        where = f" at line {line}" if line else ""
        return f"cannot parse this file: {what}{where}; nothing else was checked.", line or 1, column
    if isinstance(error, RecursionError):
        return "cannot parse this file: it nests too deeply for Python's parser; nothing was checked.", 1, 0
    if isinstance(error, MemoryError):
        return "cannot parse this file: parsing it needs more memory than there is; nothing was checked.", 1, 0
    what = str(error).strip() or type(error).__name__
    return f"cannot parse this file: {what}; nothing else was checked.", 1, 0


def unreadable(problem: FileProblem) -> str:
    return f"cannot check this file: {problem}."
