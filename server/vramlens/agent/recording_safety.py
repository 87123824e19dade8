"""Settings torch makes unsafe for a given program, found before recording starts.

A stack gathered at each free (``--free-stacks``) breaks non-reentrant activation checkpointing:
its early stop, an internal exception that ends the recomputation on the autograd thread, loses its
error, and ``backward()`` fails with "SystemError: … returned NULL without setting an exception"
(measured with torch 2.11, docs/capture-format.md "Recording settings"). A script that mentions
checkpointing is recorded without free-side stacks, and the capture says so.
"""

from __future__ import annotations

import re

_CHECKPOINTING = re.compile(r"gradient_checkpointing|torch\.utils\.checkpoint|\bcheckpoint(_sequential)?\s*\(")
_READ_AT_MOST = 4 << 20  # a script's source; a larger file is read this far


def script_uses_checkpointing(path: str) -> bool:
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as source:
            return bool(_CHECKPOINTING.search(source.read(_READ_AT_MOST)))
    except OSError:
        return False


def free_stacks_refusal(path: str) -> str | None:
    """The note to record when free-side stacks were asked for but would break this script, else None."""
    if not script_uses_checkpointing(path):
        return None
    return ("--free-stacks was not applied: the script uses activation checkpointing, which a stack gathered at each "
            "free breaks (backward() fails with SystemError); it was recorded with stacks at allocations only.")
