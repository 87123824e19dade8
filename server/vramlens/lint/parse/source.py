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
import sys
import tokenize
from dataclasses import dataclass

from vramlens.regular_files import FileProblem, human_size, read_regular_file

from ..findings import Code, Finding

_UTF8_BOM = codecs.BOM_UTF8
SOURCE_LIMIT = 10 << 20  # files (and editor documents) larger than this are not checked (docs/lint.md)


@dataclass(frozen=True)
class DecodedSource:
    text: str
    encoding: str
    bom: bool
    problem: str | None  # None when the bytes decoded cleanly; else one sentence saying what is wrong
    unreadable: bool = False  # the text cannot be trusted at all (an encoding Python does not know here)

    def encode(self, text: str) -> bytes:
        """Encode edited text back the way the file was stored (same encoding, same BOM)."""
        data = text.encode(self.encoding)
        return _UTF8_BOM + data if self.bom else data


PARSE_ERROR = Code(
    "VL000", "parse-error", "error",
    "the file could not be read or parsed",
    finds=(
        "the file cannot be decoded or parsed, or declares an encoding Python does not know here (one finding, "
        "nothing else is checked); bytes that do not decode are reported too, replaced, and the rest is checked"
    ),
    fix="—",
    why=(
        "Nothing of such a file can be checked; the finding says what made it unreadable, and the other files "
        "are checked as usual."
    ),
    example=(
        "def broken(:\n"
        "    pass"
    ),
)


def parse_error(path: str, message: str, line: int = 1, column: int = 0) -> Finding:
    """The one finding of a file that cannot be read, decoded or parsed."""
    info = PARSE_ERROR
    return Finding(path, max(line, 1), max(column, 0), max(line, 1), max(column, 0), info.code, info.rule, info.severity, message)


def decode_source(data: bytes) -> DecodedSource:
    """Honour a BOM and a PEP 263 coding cookie; undecodable bytes are replaced, never raised."""
    bom = data.startswith(_UTF8_BOM)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        info = codecs.lookup(encoding)
    except (SyntaxError, LookupError) as error:  # unknown or conflicting coding cookie
        return _unreadable(data, bom, _encoding_problem(error))
    if not getattr(info, "_is_text_encoding", True):  # rot13, zlib_codec, hex: codecs, but not of text
        return _unreadable(data, bom, f"this file declares the encoding `{encoding}`, a codec that does not decode "
                                      "text, so its text cannot be read; nothing was checked.")
    if encoding == "utf-8-sig":
        encoding = "utf-8"
        data = data[len(_UTF8_BOM):] if bom else data
    try:
        text, problem = data.decode(encoding), None
    except UnicodeDecodeError as error:
        text = data.decode(encoding, errors="replace")
        problem = f"this file contains bytes that are not valid {encoding} at offset {error.start}; they were replaced before checking."
    except LookupError as error:  # a codec that fails only once used
        return _unreadable(data, bom, f"this file's encoding `{encoding}` cannot decode it ({error}); nothing was checked.")
    return DecodedSource(text, encoding, bom, problem)


def _unreadable(data: bytes, bom: bool, problem: str) -> DecodedSource:
    text = data.decode("utf-8", errors="replace")
    return DecodedSource(text.lstrip("\ufeff"), "utf-8", bom, problem, unreadable=True)


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


def parse_failure(error: BaseException) -> tuple[str, int, int]:
    """(message, line, column) of the finding for an error the parser raised: a sentence, never an empty one."""
    if isinstance(error, SyntaxError):
        what = (error.msg or "").strip() or "invalid syntax"
        line = error.lineno if isinstance(error.lineno, int) and error.lineno > 0 else None
        column = error.offset - 1 if isinstance(error.offset, int) and error.offset > 0 else 0
        where = f" at line {line}" if line else ""
        return f"cannot parse this file: {what}{where}{_newer_syntax(what)}; nothing else was checked.", line or 1, column
    if isinstance(error, RecursionError):
        return "cannot parse this file: it nests too deeply for Python's parser; nothing was checked.", 1, 0
    if isinstance(error, MemoryError):
        return "cannot parse this file: parsing it needs more memory than there is; nothing was checked.", 1, 0
    what = str(error).strip() or type(error).__name__
    return f"cannot parse this file: {what}; nothing else was checked.", 1, 0


def _newer_syntax(what: str) -> str:
    """Python 3.12 parses f-strings with quotes, backslashes and comments inside (PEP 701); an older parser
    rejects them in code that is valid where it runs: the sentence says which parser read it."""
    if sys.version_info < (3, 12) and what.startswith("f-string"):
        return f" (Python 3.12 and later accept such f-strings; the checks ran on Python {sys.version_info[0]}.{sys.version_info[1]})"
    return ""


def unreadable(problem: FileProblem) -> str:
    return f"cannot check this file: {problem}."


def _encoding_problem(error: Exception) -> str:
    """One sentence for a coding cookie that cannot be honoured (``# -*- coding: future_fstrings -*-`` names
    a codec a package registers at run time; a BOM can contradict the cookie)."""
    message = getattr(error, "msg", None) or str(error)
    if message.startswith("unknown encoding: "):
        name = message.split(": ", 1)[1]
        return (f"this file declares the encoding `{name}`, which Python does not know without the package that "
                "registers it, so its text cannot be read; nothing was checked.")
    return f"this file's encoding cannot be determined ({message}); nothing was checked."
