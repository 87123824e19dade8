"""`vramlens.confirmDiagnosis`: measure the distinction the loaded diagnosis rests on.

The loaded capture of the file's workspace folder proposes the experiment (``Diagnosis.confirm``);
this command runs it with the same script, arguments and memory limit the capture recorded (the
editor's settings fill in the interpreter and environment), like Compare interventions: only in a
trusted workspace, in a worker thread, with progress and cancel. The verdict is written into the
capture, which is then loaded again, so hints, hovers and the report show "confirmed by
measurement" or the revised cause.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from pathlib import Path

from pygls.uris import to_fs_path

from vramlens.lsp.commands import command_guard, load_into, result, summary
from vramlens.lsp.feature import Feature
from vramlens.lsp.run_request import run_options
from vramlens.experiments.confirm import confirm
from vramlens.experiments.store_fix import proven_store_edit
from vramlens.lsp.runs import RunProgress, phased_progress, run_on_file
from vramlens.lsp.server import VramLensServer  # at run time: pygls reads the commands' annotations
from vramlens.units import parse_size_or_fraction

UNTRUSTED = ("Confirming the diagnosis runs this file's code, which VRAM Lens does only in a trusted workspace; "
             "trust the workspace, then run it again.")
NOTHING_LOADED = "Diagnose the file or open its capture first: confirming measures the loaded diagnosis."
MAX_REPEATS = 10


def _recorded(options, meta: dict):
    """The run as the capture recorded it: its arguments and memory limit."""
    argv = meta.get("argv") if isinstance(meta.get("argv"), list) else None
    limit = (meta.get("memory_limit") or {}).get("requested") if isinstance(meta.get("memory_limit"), dict) else None
    changes = {}
    if argv:
        changes["args"] = [str(arg) for arg in argv[1:]]
    if isinstance(limit, str):
        limit_bytes, limit_fraction = parse_size_or_fraction(limit)
        changes.update(memory_limit_text=limit, memory_limit_bytes=limit_bytes, memory_limit_fraction=limit_fraction)
    return dataclasses.replace(options, **changes)


async def _confirm(ls: VramLensServer, request: dict, cancel: threading.Event, progress: RunProgress) -> dict:
    uri = request["uri"]
    folder_uri, folder_path = ls.folder_of(uri)
    loaded = ls.captures.get(folder_uri)
    view = loaded.view if loaded is not None else None
    if view is None:
        return result(False, NOTHING_LOADED, folder=folder_uri)
    diagnosis = view.analysis.diagnosis
    plan = diagnosis.confirm
    if plan is None:
        why = diagnosis.measured or f"the diagnosis ({diagnosis.cause}) has no close runner-up to measure"
        return result(False, f"Nothing to confirm: {why}.", folder=folder_uri)
    repeats = request.get("repeats", 1)
    if not isinstance(repeats, int) or isinstance(repeats, bool) or not 1 <= repeats <= MAX_REPEATS:
        return result(False, f"Repeats must be a whole number from 1 to {MAX_REPEATS}, not {repeats!r}.", folder=folder_uri)
    script = Path(to_fs_path(uri))
    try:
        options = _recorded(run_options(request, ls.settings_for(uri), script, Path(folder_path) if folder_path else None),
                            view.meta)
    except ValueError as error:
        return result(False, str(error), folder=folder_uri)
    step = phased_progress(progress, options, cancel)
    capture_dir = Path(loaded.path)
    ls.log(f"Confirming {diagnosis.cause} on {script}: {plan.question}")
    proven = proven_store_edit(view.analysis)
    record = await asyncio.to_thread(confirm, plan, diagnosis.cause, diagnosis.alternative, options, capture_dir,
                                     repeats, step, cancel, proven.edit if proven is not None else None)
    progress.report("Loading the result")
    reloaded = await load_into(ls, str(capture_dir), folder_uri)
    return result(True, f"{record['result']['sentence']} {summary(reloaded)}", reloaded)


class ConfirmDiagnosis(Feature):
    def register(self, server: VramLensServer) -> None:
        server.command("vramlens.confirmDiagnosis")(command_guard(confirm_diagnosis))


async def confirm_diagnosis(ls: VramLensServer, *arguments) -> dict:
    return await run_on_file(ls, arguments, "confirm the diagnosis of", "confirming the diagnosis of", _confirm,
                             UNTRUSTED)
