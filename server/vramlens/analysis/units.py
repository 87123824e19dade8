"""Sizes in and out: bytes are ints inside; binary units appear only at the edges."""

from __future__ import annotations

import re

_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3, "t": 1000**4, "tb": 1000**4,
    "ki": 1024, "kib": 1024, "mi": 1024**2, "mib": 1024**2, "gi": 1024**3, "gib": 1024**3, "ti": 1024**4, "tib": 1024**4,
}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str) -> int:
    """Parse "24GiB", "141e9", "8 GB" or "1048576" into bytes; ValueError with a readable message otherwise."""
    match = _SIZE.match(str(text))
    if not match or match.group(2).lower() not in _UNITS:
        raise ValueError(f"cannot read {text!r} as a size (examples: 24GiB, 80GB, 141e9, 1048576)")
    value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if value <= 0:
        raise ValueError(f"a size must be positive, not {text!r}")
    return int(round(value))


def format_bytes(size: int | None, signed: bool = False) -> str:
    """Human text for a byte count in binary units, e.g. 1.50 GiB; "unknown" for None."""
    if size is None:
        return "unknown"
    sign = "-" if size < 0 else ("+" if signed and size > 0 else "")
    value = abs(size)
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= scale:
            return f"{sign}{value / scale:.2f} {unit}"
    return f"{sign}{value} B"
