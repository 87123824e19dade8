"""`vramlens.compareCaptures`: the loaded capture against an earlier one (docs/lsp-protocol.md).

Arguments ``{before: path, after?: path, workspaceFolder?}``; ``after`` defaults to the capture
loaded for the folder. Answers the CommandResult plus ``diff`` (the `vramlens diff --json` object),
``text`` (the same as the command line prints) and ``view`` (the report's side-by-side section).
"""

from __future__ import annotations

import asyncio

import attrs

from vramlens.analysis.compare.diff import diff_analyses, diff_text, diff_to_json
from vramlens.analysis.rendering.diff_view import diff_view
from vramlens.lsp.capture_store import analysed
from vramlens.lsp.commands import FolderArguments, command_guard, given, parse, result
from vramlens.lsp.feature import Feature
from vramlens.lsp.server import VramLensServer  # at run time: pygls reads the commands' annotations

COMPARE_CAPTURES = "vramlens.compareCaptures"
BEFORE_NEEDED = "Give the earlier capture to compare with as `before`."


@attrs.frozen
class CompareArguments(FolderArguments):
    before: str | None = given(BEFORE_NEEDED)
    after: str | None = given("Give the newer capture as `after`, a path (or leave it out for the loaded one).")


class CompareCaptures(Feature):
    def register(self, server: VramLensServer) -> None:
        server.command(COMPARE_CAPTURES)(command_guard(compare_captures))


async def compare_captures(ls: VramLensServer, *arguments) -> dict:
    args = parse(arguments, CompareArguments)
    if not args.before:
        return result(False, BEFORE_NEEDED)
    loaded = ls.captures.get(args.workspace_folder)
    after_path = args.after or None
    if after_path is None and (loaded is None or loaded.view is None):
        return result(False, "No capture is loaded to compare: open the newer capture first, or give it as `after`.")
    root = loaded.source_root if loaded is not None else None
    before, before_meta = await asyncio.to_thread(analysed, args.before, root)
    if after_path is not None:
        after, after_meta = await asyncio.to_thread(analysed, after_path, root)
    else:
        after, after_meta = loaded.view.analysis, loaded.view.meta
    diff = diff_analyses(before, after, before_meta, after_meta)
    shown = diff_to_json(diff)
    answer = result(True, diff.sentence, loaded)
    answer.update(diff=shown, text=diff_text(diff, args.before, after_path or loaded.path), view=diff_view(shown))
    return answer
