"""`vramlens.diagnose`: run the file under `vramlens run`, with progress and cancellation, then load it.

The run happens in a worker thread (the runner waits on the script's process), so the server
keeps answering meanwhile. Cancelling — `$/cancelRequest` for the command or
`window/workDoneProgress/cancel` for its token — ends the script's whole process tree through the
runner; the capture written so far is analysed and loaded like any other.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
from pathlib import Path

from pygls.uris import to_fs_path

from vramlens.capture import CaptureError
from vramlens.lsp.commands import command_guard, load_into, result, summary
from vramlens.lsp.feature import Feature
from vramlens.lsp.run_request import processes_per_node, run_options
from vramlens.lsp.runs import RunProgress, run_on_file, running_message
from vramlens.lsp.server import VramLensServer  # at run time: pygls reads the commands' annotations
from vramlens.runner import RunOptions, run_script
from vramlens.runner.notebook import is_notebook, run_notebook
from vramlens.runner.torchrun import run_torchrun, single_node_options

UNTRUSTED = ("Diagnosing runs this file's code, which VRAM Lens does only in a trusted workspace; "
             "trust the workspace, then run it again.")
OUTPUT_TAIL = 4000  # characters of the script's output copied to the log


class NotebookProgress:
    """``Cell 4 (3 of 9 code cells) · 1.20 GiB allocated · 2.00 GiB reserved``: the cell running and the live figures."""

    def __init__(self):
        self.where = "Starting the kernel"
        self.figures = ""

    def cell(self, state: dict) -> str:
        self.where = f"Cell {state.get('cell')} ({state.get('code_cell')} of {state.get('code_cells')} code cells)"
        return self.where + self.figures

    def memory(self, status: dict) -> str:
        self.figures = f" · {running_message(status).removeprefix('Running: ')}"
        return self.where + self.figures


def start_run(options: RunOptions, processes: int):
    """The runner for the settings: a plain run, a notebook's cells in a fresh kernel, or torchrun with
    ``processes`` ranks on this machine."""
    if is_notebook(options.script):
        return run_notebook(options)
    if processes > 1:
        return run_torchrun(options, single_node_options(processes))
    return run_script(options)


async def _diagnose(ls: VramLensServer, request: dict, cancel: threading.Event, progress: RunProgress) -> dict:
    uri = request["uri"]
    script = Path(to_fs_path(uri))
    folder_uri, folder_path = ls.folder_of(uri)
    loop = asyncio.get_running_loop()
    settings = ls.settings_for(uri)
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as output:
        try:
            options = run_options(request, settings, script, Path(folder_path) if folder_path else None, output)
            processes = processes_per_node(request, settings)
        except ValueError as error:
            return result(False, str(error), folder=folder_uri)
        options.cancel = cancel
        figures = NotebookProgress() if is_notebook(script) else None
        if figures is not None:
            options.on_progress = lambda cell: loop.call_soon_threadsafe(progress.report, figures.cell(cell))
            options.on_status = lambda status: loop.call_soon_threadsafe(progress.report, figures.memory(status))
        else:
            options.on_status = lambda status: loop.call_soon_threadsafe(progress.report, running_message(status))
        processes = 1 if figures is not None else processes
        ranks = f" on {processes} processes (torchrun)" if processes > 1 else ""
        progress.report(f"Starting {script.name}{ranks}")
        ls.log(f"Diagnosing {script}{ranks} with {options.python} in {options.cwd}; capture: {options.capture_dir}")
        try:
            run = await asyncio.to_thread(start_run, options, processes)
        finally:
            output.seek(0)
            text = output.read()
            if text:
                ls.log(f"Output of {script.name} (last {OUTPUT_TAIL} characters):\n{text[-OUTPUT_TAIL:]}")
    progress.report("Analysing the capture")
    try:
        loaded = await load_into(ls, str(run.capture_dir), folder_uri)
    except CaptureError as error:
        return {**result(False, f"{error} The capture is kept at {run.capture_dir}.", folder=folder_uri),
                "capture": str(run.capture_dir)}
    cancelled = "The run was cancelled; what it recorded is kept and analysed. " if cancel.is_set() else ""
    return result(True, cancelled + summary(loaded), loaded)


class Diagnose(Feature):
    def register(self, server: VramLensServer) -> None:
        server.command("vramlens.diagnose")(command_guard(diagnose))


async def diagnose(ls: VramLensServer, *arguments) -> dict:
    return await run_on_file(ls, arguments, "diagnose", "diagnosing", _diagnose, UNTRUSTED)
