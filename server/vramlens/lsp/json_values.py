"""What the server sends is valid JSON: NaN and ±Infinity (which Python's json writes, and no JSON
parser reads) become null, wherever they sit in a message."""

from __future__ import annotations

import json
import math


def _finite(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def finite_json(data, serialize):
    """``data`` unchanged when it serialises without NaN or Infinity; else as plain JSON values with
    those as null. ``serialize`` is the protocol's own hook for its message objects."""
    try:
        json.dumps(data, default=serialize, allow_nan=False)
        return data
    except ValueError:
        return _finite(json.loads(json.dumps(data, default=serialize)))
