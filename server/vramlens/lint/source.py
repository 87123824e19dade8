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
    problem: str | None  # None when the bytes decoded cleanly

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
        return DecodedSource(text.lstrip("\ufeff"), "utf-8", bom, f"cannot determine the encoding ({error})")
    if encoding == "utf-8-sig":
        encoding = "utf-8"
        data = data[len(_UTF8_BOM):] if bom else data
    try:
        text, problem = data.decode(encoding), None
    except UnicodeDecodeError as error:
        text = data.decode(encoding, errors="replace")
        problem = f"bytes that are not valid {encoding} at offset {error.start}"
    return DecodedSource(text, encoding, bom, problem)
