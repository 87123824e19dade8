"""The command that repeats this run with one allocator setting changed, so an experiment measures
the same script, arguments and memory cap that produced the capture."""

from __future__ import annotations

import shlex

PLACEHOLDER_SCRIPT = "YOUR_SCRIPT.py"  # a raw snapshot records no command line


def experiment_command(meta: dict, setting: str) -> str:
    """``vramlens run --try-alloc-conf SETTING [--memory-limit AS_GIVEN] argv...``."""
    argv = [str(arg) for arg in meta.get("argv") or []]
    if not argv:  # argv[0] is the script as given; without argv only its absolute path is known
        argv = [str(meta["script"])] if meta.get("script") else [PLACEHOLDER_SCRIPT]
    command = ["vramlens", "run", "--try-alloc-conf", setting]
    requested = (meta.get("memory_limit") or {}).get("requested")
    if requested:
        command += ["--memory-limit", str(requested)]
    return shlex.join(command + argv)
