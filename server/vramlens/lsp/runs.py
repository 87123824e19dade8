"""The kit of the commands that run the user's file (diagnose, compare interventions, confirm): refused
outside a trusted workspace, run in a worker thread with work-done progress, and cancellable through
`$/cancelRequest` or the progress's own cancel, which ends the script's whole process tree."""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path

import attrs
from lsprotocol import types
from pygls.uris import to_fs_path

from vramlens.capture import CaptureError
from vramlens.lsp.commands import argument_object, given, parse, result
from vramlens.lsp.protocol import command_params
from vramlens.lsp.server import VramLensServer
from vramlens.units import format_bytes

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


@attrs.frozen
class RunTarget:
    """What every command that runs the user's file needs first (each says in its own words what is missing;
    the run's own fields are read from the same object by run_request.py)."""

    uri: str | None = given(None)
    trusted: bool = given(None, default=False)  # the client's word that the workspace is trusted


async def run_on_file(ls: VramLensServer, arguments: tuple, what: str, doing: str, work, untrusted: str) -> dict:
    """The front of every command that runs the user's file: the file named, a trusted workspace, then the run."""
    target = parse(arguments, RunTarget)
    if target.uri is None:
        return result(False, f"Give the file to {what} as `uri`.")
    if not target.trusted:
        return result(False, untrusted)
    name = Path(to_fs_path(target.uri)).name
    return await run_cancellable(ls, argument_object(arguments), f"VRAM Lens: {doing} {name}", work)


def phased_progress(progress: RunProgress, options, cancel: threading.Event):
    """Progress for a sequence of runs: the step's name ("Run 2/6: …"), then the live figures of the
    run in progress behind it. Wires the run options' cancel and status; returns the step reporter."""
    loop = asyncio.get_running_loop()
    phase = ["Starting"]

    def step(text: str) -> None:
        phase[0] = text
        loop.call_soon_threadsafe(progress.report, text)

    options.cancel = cancel
    options.on_status = lambda status: loop.call_soon_threadsafe(progress.report, f"{phase[0]} · {running_message(status)}")
    return step
