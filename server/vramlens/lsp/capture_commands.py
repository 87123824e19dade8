"""The capture commands: openCapture, clearCapture, showReport, exportReport, liveAt, selectRank
(docs/lsp-protocol.md). Each takes one argument object and answers a CommandResult."""

from __future__ import annotations

import asyncio
from pathlib import Path

import attrs
from pygls.uris import to_fs_path

from vramlens.analysis.rendering.timeline_svg import timeline_svg
from vramlens.lsp.capture_store import LoadedCapture, live_at_index
from vramlens.lsp.commands import (FolderArguments, capture_loaded, command_guard, given, load_into, parse, result,
                                   send_report, summary, with_loaded_capture)
from vramlens.lsp.feature import Feature
from vramlens.lsp.report_export import export_target
from vramlens.lsp.report_payload import report_markdown
from vramlens.lsp.server import VramLensServer  # at run time: pygls reads the commands' annotations
from vramlens.regular_files import FileProblem, write_regular_file
from vramlens.units import parse_size

PATH_NEEDED = "Give the capture folder or snapshot pickle to open as `path`."
INDEX_NEEDED = "Give the trace position to look at as `index` (a whole number)."


@attrs.frozen
class OpenCaptureArguments(FolderArguments):
    path: str | None = given(PATH_NEEDED)
    total_memory: str | int | None = given("Give `totalMemory` as a size, e.g. \"80GiB\" or a number of bytes.")
    source_root: str | None = given("Give the source folder as `sourceRoot`, a path.")


@attrs.frozen
class ReportArguments(FolderArguments):
    redact: bool = given("Give `redact` as true or false.", default=False)


@attrs.frozen
class ExportArguments(ReportArguments):
    path: str | None = given("Give the file to write the report to as `path`.")
    chosen_in_save_dialog: bool = given("Give `chosenInSaveDialog` as true or false.", default=False)


@attrs.frozen
class LiveAtArguments(FolderArguments):
    index: int | None = given(INDEX_NEEDED)


@attrs.frozen
class SelectRankArguments(FolderArguments):
    rank: int | None = given("Give the rank to show as `rank` (a whole number).")


def _write_report(output: Path, text: str, svg: Path, plot: str | None) -> None:
    try:  # export_target allows missing folders only inside the workspace
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise FileProblem(f"the folder {output.parent} cannot be created ({error.strerror})") from None
    write_regular_file(output, text)
    if plot is not None:
        write_regular_file(svg, plot)


class CaptureCommands(Feature):
    def register(self, server: VramLensServer) -> None:
        server.command("vramlens.openCapture")(command_guard(open_capture))
        server.command("vramlens.clearCapture")(command_guard(clear_capture))
        server.command("vramlens.showReport")(command_guard(show_report))
        server.command("vramlens.exportReport")(command_guard(export_report))
        server.command("vramlens.liveAt")(command_guard(live_at))
        server.command("vramlens.selectRank")(command_guard(select_rank))


async def open_capture(ls: VramLensServer, *arguments) -> dict:
    args = parse(arguments, OpenCaptureArguments)
    if not args.path:
        return result(False, PATH_NEEDED)
    try:
        total_memory = parse_size(str(args.total_memory)) if args.total_memory else None
    except ValueError as error:
        return result(False, f"totalMemory: {error}.")
    loaded = await load_into(ls, args.path, args.workspace_folder, total_memory, args.source_root)
    return result(True, summary(loaded), loaded)


async def clear_capture(ls: VramLensServer, *arguments) -> dict:
    folder = parse(arguments, FolderArguments).workspace_folder
    cleared = ls.captures.clear(folder)
    ls.captures_changed()
    return result(True, f"Cleared {len(cleared)} capture{'' if len(cleared) == 1 else 's'}.", folder=folder)


@with_loaded_capture(ReportArguments)
async def show_report(ls: VramLensServer, args: ReportArguments, loaded: LoadedCapture) -> dict:
    send_report(ls, loaded, args.redact)
    return result(True, f"Report: {summary(loaded)}", loaded)


@with_loaded_capture(ExportArguments)
async def export_report(ls: VramLensServer, args: ExportArguments, loaded: LoadedCapture) -> dict:
    folders = [to_fs_path(uri) for uri in ls.folder_uris()]
    output, refusal = export_target(args.path, folders, args.chosen_in_save_dialog)
    if output is None:
        return result(False, refusal, loaded)
    svg = output.with_name(output.stem + "-timeline.svg")
    text = report_markdown(loaded, svg.name, args.redact)
    view = loaded.view
    plot = timeline_svg(view.analysis.timeline, view.analysis.accounting.limit) if view is not None else None
    try:  # off the event loop: a slow disk must not hold up the protocol
        await asyncio.to_thread(_write_report, output, text, svg, plot)
    except FileProblem as problem:
        return result(False, f"Cannot write the report: {problem}.", loaded)
    shown = f" (timeline plot: {svg.name})" if plot is not None else ""
    return result(True, f"Report written to {output}{shown}.", loaded)


@with_loaded_capture(LiveAtArguments)
async def live_at(ls: VramLensServer, args: LiveAtArguments, loaded: LoadedCapture) -> dict:
    if args.index is None or args.index < 0:
        return result(False, INDEX_NEEDED, loaded)
    found = await asyncio.to_thread(live_at_index, loaded, args.index)
    if found is None:
        return result(False, "The shown capture holds no allocator trace to replay.", loaded)
    answer = result(True, found["summary"], loaded)
    answer["liveAt"] = found
    return answer


@with_loaded_capture(SelectRankArguments)
async def select_rank(ls: VramLensServer, args: SelectRankArguments, loaded: LoadedCapture) -> dict:
    shown = [view.rank for view in loaded.ranks]
    if loaded.comparison is None:
        return result(False, "The loaded capture is of one process: there is no other rank to show.", loaded)
    if args.rank is None or not loaded.select_rank(args.rank):
        return result(False, f"There is no analysed capture of rank {args.rank!r} here; the ranks shown are "
                             f"{', '.join(map(str, shown))}.", loaded)
    capture_loaded(ls, loaded)
    return result(True, summary(loaded), loaded)
