"""`vramlens.compareCaptures`: the loaded capture against an earlier one (docs/lsp-protocol.md).

Arguments ``{before: path, after?: path, workspaceFolder?}``; ``after`` defaults to the capture
loaded for the folder. Answers the CommandResult plus ``diff`` (the `vramlens diff --json` object)
and ``text`` (the same as the command line prints), for the report view.
"""

from __future__ import annotations

import asyncio

from vramlens.analysis import analyze_capture
from vramlens.analysis.compare.diff import diff_analyses, diff_text, diff_to_json
from vramlens.capture import load_capture
from vramlens.lsp.commands import argument, command_guard, result
from vramlens.lsp.server import VramLensServer  # at run time: pygls reads the commands' annotations

COMPARE_CAPTURES = "vramlens.compareCaptures"


def _analysed(path: str, source_root: str | None):
    capture = load_capture(path)
    return analyze_capture(capture, source_root=source_root), capture.meta


def register(server: VramLensServer) -> None:
    @server.command(COMPARE_CAPTURES)
    @command_guard
    async def compare_captures(ls: VramLensServer, *arguments) -> dict:
        args = argument(arguments)
        before_path = args.get("before")
        if not isinstance(before_path, str) or not before_path:
            return result(False, "Give the earlier capture to compare with as `before`.")
        loaded = ls.captures.get(args.get("workspaceFolder"))
        after_path = args.get("after") if isinstance(args.get("after"), str) and args.get("after") else None
        if after_path is None and (loaded is None or loaded.view is None):
            return result(False, "No capture is loaded to compare: open the newer capture first, or give it as `after`.")
        root = loaded.source_root if loaded is not None else None
        before, before_meta = await asyncio.to_thread(_analysed, before_path, root)
        if after_path is not None:
            after, after_meta = await asyncio.to_thread(_analysed, after_path, root)
        else:
            after, after_meta = loaded.view.analysis, loaded.view.meta
        diff = diff_analyses(before, after, before_meta, after_meta)
        answer = result(True, diff.sentence, loaded)
        answer.update(diff=diff_to_json(diff), text=diff_text(diff, before_path, after_path or loaded.path))
        return answer
