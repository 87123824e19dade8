"""Turning file bytes into text the way Python itself would, without ever raising."""

from __future__ import annotations

import codecs
import io
import tokenize
from dataclasses import dataclass

_UTF8_BOM = codecs.BOM_UTF8


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


def decode_source(data: bytes) -> DecodedSource:
    """Honour a BOM and a PEP 263 coding cookie; undecodable bytes are replaced, never raised."""
    bom = data.startswith(_UTF8_BOM)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        codecs.lookup(encoding)
    except (SyntaxError, LookupError) as error:  # unknown or conflicting coding cookie
        text = data.decode("utf-8", errors="replace")
        return DecodedSource(text.lstrip("\ufeff"), "utf-8", bom, _encoding_problem(error), unreadable=True)
    if encoding == "utf-8-sig":
        encoding = "utf-8"
        data = data[len(_UTF8_BOM):] if bom else data
    try:
        text, problem = data.decode(encoding), None
    except UnicodeDecodeError as error:
        text = data.decode(encoding, errors="replace")
        problem = f"this file contains bytes that are not valid {encoding} at offset {error.start}; they were replaced before checking."
    return DecodedSource(text, encoding, bom, problem)


def _encoding_problem(error: Exception) -> str:
    """One sentence for a coding cookie that cannot be honoured (``# -*- coding: future_fstrings -*-`` names
    a codec a package registers at run time; a BOM can contradict the cookie)."""
    message = getattr(error, "msg", None) or str(error)
    if message.startswith("unknown encoding: "):
        name = message.split(": ", 1)[1]
        return (f"this file declares the encoding `{name}`, which Python does not know without the package that "
                "registers it, so its text cannot be read; nothing was checked.")
    return f"this file's encoding cannot be determined ({message}); nothing was checked."
