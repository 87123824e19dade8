"""Byte sizes at the edges: parse what people type, print what people read (binary units)."""

from __future__ import annotations

import math
import re

_UNITS = {
    "": 1, "b": 1,
    "k": 1024, "kb": 1000, "kib": 1024,
    "m": 1024**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1024**3, "gb": 1000**3, "gib": 1024**3,
    "t": 1024**4, "tb": 1000**4, "tib": 1024**4,
}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
MAX_SIZE = 1 << 60  # 1 EiB: more memory than any device has


def parse_size(text: str) -> int:
    """'24GiB' → 25769803776; '141e9' → 141000000000; '512' → 512 (bytes)."""
    match = _SIZE.match(text)
    if not match or match.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (examples: 24GiB, 8192MiB, 141e9)")
    size = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if not math.isfinite(size) or size > MAX_SIZE:
        raise ValueError(f"{text!r} is more memory than any device has (examples: 24GiB, 8192MiB, 141e9)")
    return int(size)


def parse_size_or_fraction(text: str) -> tuple[int | None, float | None]:
    """A memory limit: a size with its unit ('24GiB') or a fraction of the device (0 < f ≤ 1)."""
    try:
        value = float(text)
    except ValueError:
        size = parse_size(text)
        if size <= 0:
            raise ValueError(f"{text!r} must be more than zero") from None
        return size, None
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a size nor a fraction (examples: 24GiB, 0.2)")
    if 0 < value <= 1:
        return None, value
    if value <= 0:
        raise ValueError(f"{text!r} must be more than zero")
    raise ValueError(f"{text!r} is ambiguous: write a size with its unit (24GiB) or a fraction of the GPU (0.2)")


IMPOSSIBLE_BYTES = 1 << 70  # a thousand exbibytes: formatted as not a real size, never divided


def format_bytes(size: int | None) -> str:
    if size is None:
        return "unknown"
    if isinstance(size, float) and size != size:  # NaN: no size at all
        return "unknown"
    sign = "-" if size < 0 else ""
    size = abs(size)
    if size >= IMPOSSIBLE_BYTES:  # never a real amount of memory; and dividing an int of 400 digits overflows
        return f"{sign}more than {IMPOSSIBLE_BYTES >> 60} EiB (not a real size)"
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            return f"{sign}{size / scale:.2f} {unit}"
    return f"{sign}{size} B"


def count_of(count: int, noun: str, plural: str | None = None) -> str:
    """`1 tensor`, `23 tensors`: a count with its noun, never `tensor(s)`."""
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"
