"""The capture commands: openCapture, clearCapture, showReport, exportReport, selectRank (docs/lsp-protocol.md).

Each takes one argument object and answers a CommandResult ``{ok, message, capture?,
workspaceFolder?}``; a failure is one sentence in ``message``, never a dead server.
"""

from __future__ import annotations

import asyncio
import functools
import os
import traceback
from pathlib import Path
from lsprotocol import types
from pygls.uris import to_fs_path

from vramlens.analysis.experiments.experiment import chosen_sentence
from vramlens.analysis.rendering.timeline_svg import timeline_svg
from vramlens.capture import CaptureError
from vramlens.lsp.capture_store import LoadedCapture, live_at_index
from vramlens.lsp.wording import cause_text
from vramlens.lsp.load_worker import load_in_worker
from vramlens.lsp.report_export import export_target
from vramlens.lsp.report_payload import report_markdown, report_payload
from vramlens.regular_files import FileProblem, write_regular_file
from vramlens.lsp.server import VramLensServer  # at run time: pygls reads the commands' annotations
from vramlens.safe_text import one_line
from vramlens.units import parse_size

REPORT = "vramlens/report"


def _write_report(output: Path, text: str, svg: Path, plot: str | None) -> None:
    try:  # export_target allows missing folders only inside the workspace
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise FileProblem(f"the folder {output.parent} cannot be created ({error.strerror})") from None
    write_regular_file(output, text)
    if plot is not None:
        write_regular_file(svg, plot)


def result(ok: bool, message: str, loaded: LoadedCapture | None = None, folder: str | None = None) -> dict:
    """The CommandResult; its message is shown as text, so it is one line without control characters."""
    return {"ok": ok, "message": one_line(message), "capture": loaded.path if loaded else None,
            "workspaceFolder": loaded.folder_uri if loaded else folder}


def argument(arguments: tuple) -> dict:
    return arguments[0] if arguments and isinstance(arguments[0], dict) else {}


def is_here(line) -> bool:
    """Whether a recorded user line was found on this machine: in a file, or in a notebook's cell."""
    return bool(line.local_path or (line.cell is not None and line.cell.notebook))


def summary(loaded: LoadedCapture) -> str:
    """One line for the user: the cause first, then the top line and what happened (an experiment: what it chose)."""
    if loaded.experiment is not None:
        return experiment_summary(loaded.experiment)
    analysis = loaded.view.analysis
    diagnosis = analysis.diagnosis
    cause = cause_text(diagnosis.cause)
    text = f"{cause[:1].upper()}{cause[1:]} ({diagnosis.confidence_label} confidence)."
    top = next((line for line in analysis.lines if line.path and line.live_bytes > 0), None)
    if top is not None and not is_here(top):
        text += f" No recorded frame matched a file in this workspace (top line {top.label}): choose the source folder."
    elif top is not None:
        text += f" Top line {top.label}."
    outcome = analysis.outcome_text
    if outcome:
        text += f" Run: {outcome.rstrip('.')}."
    if loaded.comparison is not None:
        failing = loaded.comparison.failing_rank
        text = (f"Rank {loaded.view.rank} of {len(loaded.comparison.ranks)}"
                f"{' (the rank that failed first)' if failing is not None and failing == loaded.view.rank else ''}: {text}")
    return text


def experiment_summary(experiment: dict) -> str:
    variants = experiment.get("variants") or []
    runs = sum(len(variant.get("runs") or []) for variant in variants)
    chosen = chosen_sentence(experiment)
    text = f"Experiment on {os.path.basename(experiment.get('script') or '')}: {len(variants)} variant{'' if len(variants) == 1 else 's'}, {runs} runs. "
    text += f"Chosen: {chosen}" if chosen else "Nothing chosen: no variant beat the baseline beyond the run-to-run noise."
    return text.rstrip(".") + "."


def command_guard(function):
    """A command that fails unexpectedly answers ok: false with one sentence; the server goes on."""

    @functools.wraps(function)
    async def guarded(ls: VramLensServer, *arguments):
        try:
            return await function(ls, *arguments)
        except CaptureError as error:
            return result(False, str(error))
        except Exception as error:  # noqa: BLE001 - reported, logged, survived
            ls.log(traceback.format_exc(), types.MessageType.Error)
            return result(False, f"{function.__name__} failed unexpectedly ({type(error).__name__}: {error}); "
                                 "the details are in the VRAM Lens log.")

    return guarded


def with_loaded_capture(function):
    """A command on the folder's loaded capture (``workspaceFolder``, else any): without one it says so."""

    async def on_capture(ls: VramLensServer, *arguments) -> dict:
        args = argument(arguments)
        loaded = ls.captures.get(args.get("workspaceFolder"))
        if loaded is None:
            return result(False, "No capture is loaded: run “Diagnose CUDA memory” or open a capture first.")
        return await function(ls, args, loaded)

    on_capture.__name__ = function.__name__  # not functools.wraps: pygls reads the outer signature
    return on_capture


def capture_loaded(ls: VramLensServer, loaded: LoadedCapture) -> None:
    """A capture was loaded, replaced, or shows another rank: figures move, diagnostics and the report follow."""
    ls.captures.put(loaded)
    ls.placements.reset()
    ls.annotations_changed()
    ls.publish_all()
    send_report(ls, loaded)


def send_report(ls: VramLensServer, loaded: LoadedCapture, redacted: bool = False) -> None:
    ls.protocol.notify(REPORT, report_payload(loaded, ls.uri_of, redacted))


async def load_into(ls: VramLensServer, path: str, folder_uri: str | None, total_memory: int | None = None,
                    source_root: str | None = None) -> LoadedCapture:
    """Analyse in a worker process (a large or hostile capture takes seconds, or would take the server
    with it) and load the result for the folder. Cancelling the request, or shutdown, ends the worker.

    ``source_root``: the folder the recorded files are mapped onto, when the user chose one (it may lie
    outside every workspace folder, e.g. the shipped sample); the load is then kept under that folder's URI
    unless a workspace folder is named."""
    if source_root:
        root = Path(source_root).resolve()
        if not root.is_dir():
            raise CaptureError(f"Choose an existing folder as the source folder: {source_root} is not a folder.")
        holder = _folder_holding(ls, root)
        folder_uri, folder_path = folder_uri or holder or ls.uri_of(str(root)), str(root)
    else:
        folder_uri, folder_path = ls.folder_of(folder_uri) if folder_uri else ls.folder_of(ls.uri_of(str(Path(path).resolve())))
        if folder_uri is None:
            raise CaptureError("Open a workspace folder first: a capture is mapped onto the files of a workspace folder.")
    request_id = ls.protocol.msg_id
    ls.loading[request_id] = asyncio.current_task()
    try:
        loaded = await load_in_worker(path, folder_uri, folder_path, total_memory)
    except asyncio.CancelledError:
        raise CaptureError(f"Loading {path} was cancelled.") from None
    finally:
        ls.loading.pop(request_id, None)
    capture_loaded(ls, loaded)
    ls.log(f"Loaded {loaded.path} for {folder_uri}; recorded paths mapped onto {loaded.source_root}.")
    return loaded


def _folder_holding(ls: VramLensServer, path: Path) -> str | None:
    """The workspace folder that contains ``path``, or None (ls.folder_of falls back to the first folder)."""
    for folder in ls.folder_uris():
        folder_path = to_fs_path(folder)
        if folder_path and (path == Path(folder_path) or Path(folder_path) in path.parents):
            return folder
    return None


def register(server: VramLensServer) -> None:
    @server.command("vramlens.openCapture")
    @command_guard
    async def open_capture(ls: VramLensServer, *arguments) -> dict:
        args = argument(arguments)
        path = args.get("path")
        if not isinstance(path, str) or not path:
            return result(False, "Give the capture folder or snapshot pickle to open as `path`.")
        total = args.get("totalMemory")
        try:
            total_memory = parse_size(str(total)) if total else None
        except ValueError as error:
            return result(False, f"totalMemory: {error}.")
        source_root = args.get("sourceRoot") if isinstance(args.get("sourceRoot"), str) else None
        loaded = await load_into(ls, path, args.get("workspaceFolder"), total_memory, source_root)
        return result(True, summary(loaded), loaded)

    @server.command("vramlens.clearCapture")
    @command_guard
    async def clear_capture(ls: VramLensServer, *arguments) -> dict:
        folder = argument(arguments).get("workspaceFolder")
        cleared = ls.captures.clear(folder)
        ls.placements.reset()
        ls.annotations_changed()
        ls.publish_all()
        return result(True, f"Cleared {len(cleared)} capture{'' if len(cleared) == 1 else 's'}.", folder=folder)

    @server.command("vramlens.showReport")
    @command_guard
    @with_loaded_capture
    async def show_report(ls: VramLensServer, args: dict, loaded: LoadedCapture) -> dict:
        send_report(ls, loaded, bool(args.get("redact")))
        return result(True, f"Report: {summary(loaded)}", loaded)

    @server.command("vramlens.exportReport")
    @command_guard
    @with_loaded_capture
    async def export_report(ls: VramLensServer, args: dict, loaded: LoadedCapture) -> dict:
        folders = [to_fs_path(uri) for uri in ls.folder_uris()]
        output, refusal = export_target(args.get("path"), folders, args.get("chosenInSaveDialog") is True)
        if output is None:
            return result(False, refusal, loaded)
        svg = output.with_name(output.stem + "-timeline.svg")
        text = report_markdown(loaded, svg.name, bool(args.get("redact")))
        view = loaded.view
        plot = timeline_svg(view.analysis.timeline, view.analysis.accounting.limit) if view is not None else None
        try:  # off the event loop: a slow disk must not hold up the protocol
            await asyncio.to_thread(_write_report, output, text, svg, plot)
        except FileProblem as problem:
            return result(False, f"Cannot write the report: {problem}.", loaded)
        shown = f" (timeline plot: {svg.name})" if plot is not None else ""
        return result(True, f"Report written to {output}{shown}.", loaded)

    @server.command("vramlens.liveAt")
    @command_guard
    @with_loaded_capture
    async def live_at(ls: VramLensServer, args: dict, loaded: LoadedCapture) -> dict:
        index = args.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            return result(False, "Give the trace position to look at as `index` (a whole number).", loaded)
        found = await asyncio.to_thread(live_at_index, loaded, index)
        if found is None:
            return result(False, "The shown capture holds no allocator trace to replay.", loaded)
        answer = result(True, found["summary"], loaded)
        answer["liveAt"] = found
        return answer

    @server.command("vramlens.selectRank")
    @command_guard
    @with_loaded_capture
    async def select_rank(ls: VramLensServer, args: dict, loaded: LoadedCapture) -> dict:
        rank = args.get("rank")
        shown = [view.rank for view in loaded.ranks]
        if loaded.comparison is None:
            return result(False, "The loaded capture is of one process: there is no other rank to show.", loaded)
        if not isinstance(rank, int) or isinstance(rank, bool) or not loaded.select_rank(rank):
            return result(False, f"There is no analysed capture of rank {rank!r} here; the ranks shown are "
                                 f"{', '.join(map(str, shown))}.", loaded)
        capture_loaded(ls, loaded)
        return result(True, summary(loaded), loaded)
