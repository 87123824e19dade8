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
import uuid
from pathlib import Path

from lsprotocol import types
from pygls.uris import to_fs_path

from vramlens.capture import CaptureError
from vramlens.lsp.commands import argument, command_guard, load_into, result, summary
from vramlens.lsp.run_request import processes_per_node, run_options
from vramlens.lsp.server import VramLensServer, command_params
from vramlens.runner import RunOptions, run_script
from vramlens.runner.notebook import is_notebook, run_notebook
from vramlens.runner.torchrun import run_torchrun, single_node_options
from vramlens.units import format_bytes

UNTRUSTED = ("Diagnosing runs this file's code, which VRAM Lens does only in a trusted workspace; "
             "trust the workspace, then run it again.")
OUTPUT_TAIL = 4000  # characters of the script's output copied to the log
# The runner speaks to command-line users; in the editor the interpreter is a setting.
_CLI_WORDS = (("with --python", "in the vramlens.interpreter setting"), ("check --python", "check the vramlens.interpreter setting"))


def for_the_editor(message: str) -> str:
    for cli, editor in _CLI_WORDS:
        message = message.replace(cli, editor)
    return message


def running_message(status: dict) -> str:
    return f"Running: {format_bytes(status.get('allocated'))} allocated · {format_bytes(status.get('reserved'))} reserved"


class RunProgress:
    """Work-done progress on the request's token, or on one the server creates; cancelling it sets ``cancel``."""

    def __init__(self, ls: VramLensServer, token: types.ProgressToken | None):
        self.ls, self.token = ls, token

    @classmethod
    async def begin(cls, ls: VramLensServer, title: str, cancel: threading.Event) -> "RunProgress":
        """Progress on the request's token, else on one created here; without either, reports go nowhere."""
        params = command_params.get()
        token = params.work_done_token if params else None
        window = ls.client_capabilities.window
        if token is None and window and window.work_done_progress:
            token = f"vramlens-diagnose-{uuid.uuid4().hex}"
            try:
                await ls.work_done_progress.create_async(token)
            except Exception:  # noqa: BLE001 - the client declined: run without progress
                token = None
        progress = cls(ls, token)
        if token is not None:
            ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True))
            ls.work_done_progress.tokens[token].add_done_callback(lambda future: future.cancelled() and cancel.set())
        return progress

    def report(self, message: str) -> None:
        if self.token is not None:
            self.ls.work_done_progress.report(self.token, types.WorkDoneProgressReport(message=message))

    def end(self, message: str) -> None:
        if self.token is not None:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
            self.ls.work_done_progress.tokens.pop(self.token, None)


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


async def run_cancellable(ls: VramLensServer, request: dict, title: str, work) -> dict:
    """Run ``work(ls, request, cancel, progress)`` as a cancellable command with work-done progress."""
    cancel = threading.Event()
    request_id = ls.protocol.msg_id
    ls.cancellable_commands[request_id] = cancel
    ls.running_commands[request_id] = asyncio.current_task()
    progress = await RunProgress.begin(ls, title, cancel)
    outcome = result(False, "The run stopped unexpectedly.")
    try:
        outcome = await work(ls, request, cancel, progress)
    except CaptureError as error:
        outcome = result(False, for_the_editor(str(error)), folder=ls.folder_of(request["uri"])[0])
    finally:
        ls.cancellable_commands.pop(request_id, None)
        ls.running_commands.pop(request_id, None)
        progress.end(outcome["message"])
    return outcome


async def run_on_file(ls: VramLensServer, arguments: tuple, what: str, doing: str, work,
                      untrusted: str = UNTRUSTED) -> dict:
    """The front of every command that runs the user's file: the file named, a trusted workspace, then the run."""
    request = argument(arguments)
    if not isinstance(request.get("uri"), str):
        return result(False, f"Give the file to {what} as `uri`.")
    if request.get("trusted") is not True:
        return result(False, untrusted)
    name = Path(to_fs_path(request["uri"])).name
    return await run_cancellable(ls, request, f"VRAM Lens: {doing} {name}", work)


def register(server: VramLensServer) -> None:
    @server.command("vramlens.diagnose")
    @command_guard
    async def diagnose(ls: VramLensServer, *arguments) -> dict:
        return await run_on_file(ls, arguments, "diagnose", "diagnosing", _diagnose)
