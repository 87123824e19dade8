"""`vramlens run NOTEBOOK.ipynb`: the notebook's cells, in order, in a fresh kernel of the user's
interpreter, recorded from the first cell (agent/notebook_driver.py runs there, beside the kernel).

The same watch as a script's run: the driver's process group is ended at the timeout or on cancel
(the kernel writes its capture first), NVML is sampled meanwhile, and the capture is finished with
the server's samples of the kernel's own process.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from vramlens.agent.notebook_file import NotebookError, read_notebook
from vramlens.capture.errors import CaptureError
from vramlens.runner.launch import (
    AGENT_SCRIPT, NoCaptureWritten, RunOptions, RunResult, agent_arguments, captures_of_run, check_capture_target,
    check_started, finish_capture, how_it_ended, prepare_run, read_json, start_and_watch,
)
from vramlens.runner.status_watch import StatusWatch

NOTEBOOK_LAUNCH = AGENT_SCRIPT.with_name("notebook_launch.py")
NOTEBOOK_SUFFIX = ".ipynb"


def is_notebook(path: str | Path) -> bool:
    return Path(path).suffix.lower() == NOTEBOOK_SUFFIX


def run_notebook(options: RunOptions) -> RunResult:
    notebook, capture_dir, run_id = prepare_run(options, check_capture_target)
    if options.args:
        raise CaptureError("A notebook takes no arguments; set what it needs in its cells or in the environment.")
    try:  # checked here first, so a damaged notebook is one sentence before any kernel starts
        read_notebook(str(notebook))
    except NotebookError as error:
        raise CaptureError(str(error)) from None
    with tempfile.TemporaryDirectory(prefix="vramlens-notebook-") as scratch:
        status_file = Path(scratch) / "status.json"
        progress_file = Path(scratch) / "progress.json"
        arguments = agent_arguments(options, notebook.resolve(), capture_dir, status_file, run_id)  # the kernel may start elsewhere
        command = [options.python, str(NOTEBOOK_LAUNCH), "--progress-file", str(progress_file), *arguments]
        progress = (StatusWatch(progress_file, options.on_progress, required_key="cell").start()
                    if options.on_progress else None)
        try:
            watched = start_and_watch(options, command, status_file=status_file)
        finally:
            if progress:
                progress.stop()
        status = read_json(status_file)
        check_started(status, "The notebook could not be run.")
        written = captures_of_run([capture_dir], run_id)
        if not written:  # the driver's sentence says so when the kernel died
            raise NoCaptureWritten(status.get("message") or f"The notebook's kernel {how_it_ended(watched)} before a "
                                   "capture could be written; nothing was recorded.", watched.exit_code)
        [(_, meta)] = written
        # NVML lists the kernel's process, not the driver's: its PID is the one the capture names.
        kernel_pid = meta.get("pid") if isinstance(meta.get("pid"), int) else watched.pid
        final = finish_capture(capture_dir, meta, watched.sampler, kernel_pid, watched.ending, watched.exit_code, options)
    return RunResult(exit_code=watched.exit_code, capture_dir=capture_dir, status=final)
