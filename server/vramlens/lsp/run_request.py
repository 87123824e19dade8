"""A `vramlens.diagnose` request and the folder's settings -> the runner's options. Pure (no pygls).

Fields the request leaves out come from the settings; a value that cannot be used raises
ValueError with one sentence for the user.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO

from vramlens.lsp.settings import MAX_PROCESSES_PER_NODE, MAX_TIMEOUT_S, Settings, checked_count
from vramlens.runner import RunOptions
from vramlens.runner.launch import default_capture_dir
from vramlens.runner.notebook import is_notebook
from vramlens.units import parse_size_or_fraction


def _given(request: dict, key: str, kind: type):
    value = request.get(key)
    return value if isinstance(value, kind) else None


def processes_per_node(request: dict, settings: Settings) -> int:
    """More than 1: run through torchrun on this machine, one process (and capture) per rank.
    ValueError with one sentence for a number no machine could run."""
    if request.get("processesPerNode") is not None:
        value, problem = checked_count(request["processesPerNode"], "processesPerNode", 0, MAX_PROCESSES_PER_NODE)
        if problem:
            raise ValueError(problem.replace("vramlens.processesPerNode", "processesPerNode"))
        return value
    if "processesPerNode" in settings.problems:
        raise ValueError(settings.problems["processesPerNode"])
    return settings.processes_per_node


def run_options(request: dict, settings: Settings, script: Path, folder: Path | None, output: IO | None = None) -> RunOptions:
    if not script.is_file():
        raise ValueError(f"{script} is not a file on disk; save it first.")
    interpreter = _given(request, "interpreter", str) or settings.interpreter or sys.executable
    notebook = is_notebook(script)
    args = [] if notebook else _given(request, "args", list)  # a notebook's kernel takes no arguments
    # A notebook's kernel starts in the notebook's folder, as Jupyter starts it; a script in the workspace folder.
    cwd = Path(_given(request, "cwd", str) or settings.cwd or (script.parent if notebook else folder or script.parent))
    if not cwd.is_dir():
        raise ValueError(f"The working folder {cwd} does not exist; check the vramlens.cwd setting.")
    limit_text = _given(request, "memoryLimit", str) or settings.memory_limit
    limit_bytes = limit_fraction = None
    if limit_text:
        try:
            limit_bytes, limit_fraction = parse_size_or_fraction(limit_text)
        except ValueError as error:
            raise ValueError(f"The memory limit {limit_text!r} cannot be used ({error}); "
                             "check the vramlens.memoryLimit setting.") from None
    stacks = _given(request, "stacks", str) or settings.stacks
    timeout = request.get("timeoutSeconds")
    if timeout is not None and not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
                                    and 0 <= timeout <= MAX_TIMEOUT_S):
        raise ValueError(f"timeoutSeconds must be a number of seconds from 0 to {MAX_TIMEOUT_S:.0f}.")
    if timeout is None and "timeoutSeconds" in settings.problems:
        raise ValueError(settings.problems["timeoutSeconds"])
    timeout = timeout if timeout else settings.timeout_s
    env = dict(settings.env)
    env.update({str(k): str(v) for k, v in (_given(request, "env", dict) or {}).items()})
    return RunOptions(
        script=script,
        args=[str(a) for a in args] if args is not None else list(settings.args),
        python=interpreter,
        capture_dir=default_capture_dir(script, folder or script.parent),
        stacks=stacks if stacks in ("python", "all") else "python",
        memory_limit_bytes=limit_bytes,
        memory_limit_fraction=limit_fraction,
        memory_limit_text=limit_text or None,
        timeout_s=timeout or None,
        source_root=folder or script.parent,
        extra_env=env,
        cwd=cwd,
        output=output,
    )
