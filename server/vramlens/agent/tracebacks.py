"""The script's failure as Python itself would have shown it: no agent frames, chains kept."""

from __future__ import annotations

import os
import traceback


def safe_str(value) -> str:
    """str() of a user's object, which may itself raise."""
    try:
        return str(value)
    except Exception as error:
        return f"<str() failed: {type(error).__name__}>"


def _from_script(tb, script: str):
    """The traceback from the script's first frame inward (the agent's frames are not the user's)."""
    start = tb
    while start is not None and os.path.abspath(start.tb_frame.f_code.co_filename) != script:
        start = start.tb_next
    return start


def user_traceback_text(error: BaseException, script: str) -> str:
    try:
        shown = traceback.TracebackException(type(error), error, _from_script(error.__traceback__, script))
        return "".join(shown.format())
    except Exception:  # a broken exception object must not cost the capture
        return f"{type(error).__name__}: {safe_str(error)}\n"


def describe(error: BaseException | None, script: str) -> dict | None:
    if error is None:
        return None
    kind = type(error)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    frames = traceback.extract_tb(_from_script(error.__traceback__, script))
    return {
        "type": name,
        "message": safe_str(error),
        "traceback": user_traceback_text(error, script),
        "frames": [{"filename": f.filename, "line": f.lineno, "name": f.name} for f in frames],
    }


# torch 2.12 refuses a request beyond the per-process fraction before asking the device, in other words.
OOM_MESSAGES = ("CUDA out of memory", "Allocation was preemptively rejected because it would exceed "
                "per_process_memory_fraction limit")


def is_oom(error: BaseException | None) -> bool:
    if error is None:
        return False
    text = safe_str(error)
    return type(error).__name__ == "OutOfMemoryError" or any(message in text for message in OOM_MESSAGES)
