"""Language-server latency over stdio, as an editor sees it.

    python benchmarks/lsp_latency.py [MILLION.pickle] [--total-memory 150109880320] [--rounds 300] [--file PATH]

1. Hover and inlay-hint requests on record_million.py with the real 1,000,000-entry snapshot
   (recorded by benchmarks/record_million.py, not committed) loaded through vramlens.openCapture.
   Its frames name the recording checkout's benchmarks/record_million.py; a temporary workspace
   holds a copy, onto which the server maps them by path suffix. Goal: p99 < 20 ms. Skipped
   without the snapshot.
2. Diagnostics on a 5,000-line file assembled from the lint corpus (or ``--file``): a line typed
   in a function body near the middle and typed back, each change followed by didSave ->
   publishDiagnostics (with the capture loaded, when there is one), beside `lint_source` with a
   cache on the same edits in this process (what the server runs: it keeps one per document);
   then an edit of the imports, which every part of the file depends on (the worst case);
   and code actions on a finding right after each publish. Goal: < 100 ms after an edit.
Each figure is the time from sending the message to receiving the answer, in one client process.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lint_speed import body_edit, edit_times, header_edit, realistic_source  # the lint corpus (real training code)
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from vramlens.lint import lint_source

HERE = Path(__file__).resolve().parent
def summary(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return (f"{name:<34} n={len(samples):<4} median {statistics.median(samples) * 1000:7.2f} ms   "
            f"p99 {p99 * 1000:7.2f} ms   max {ordered[-1] * 1000:7.2f} ms")


async def main(args: argparse.Namespace) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="vramlens-bench-"))
    (workspace / "benchmarks").mkdir()
    script = workspace / "benchmarks" / "record_million.py"
    shutil.copy(HERE / "record_million.py", script)
    big = workspace / "five_thousand.py"
    big.write_text(Path(args.file).read_text(encoding="utf-8") if args.file else realistic_source(5000))

    client = LanguageClient("vramlens-bench", "1")
    published: asyncio.Queue = asyncio.Queue()
    client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(lambda params: published.put_nowait(params))
    for method in ("vramlens/report", "vramlens/annotationsChanged", types.WINDOW_LOG_MESSAGE):
        client.feature(method)(lambda params: None)
    await client.start_io(sys.executable, "-m", "vramlens.lsp")
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="bench")],
    ))
    client.initialized(types.InitializedParams())

    hover_times, hint_times = [], []
    if args.snapshot:
        hover_times, hint_times = await _capture_requests(client, published, script, args)
    await _diagnostics(client, published, big, args, hover_times, hint_times)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    shutil.rmtree(workspace, ignore_errors=True)


async def _capture_requests(client, published, script: Path, args) -> tuple[list[float], list[float]]:
    started = time.perf_counter()
    outcome = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="vramlens.openCapture",
        arguments=[{"path": args.snapshot, "totalMemory": args.total_memory}]))
    print(f"openCapture (restricted load + analysis): {time.perf_counter() - started:.2f} s; {outcome['message']}")

    uri = script.as_uri()
    text = script.read_text()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    await published.get()
    whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=len(text.splitlines()), character=0))
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=whole))
    lines = sorted(hint.position.line for hint in hints or [])
    print(f"record_million.py: {len(lines)} annotated lines, e.g. line {lines[0] + 1}: {hints[0].label!r}")

    hover_times, hint_times = [], []
    for round_ in range(args.rounds):
        line = lines[round_ % len(lines)]
        t = time.perf_counter()
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=4)))
        hover_times.append(time.perf_counter() - t)
        assert hover is not None
        t = time.perf_counter()
        await client.text_document_inlay_hint_async(types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=whole))
        hint_times.append(time.perf_counter() - t)
    return hover_times, hint_times


async def _publish_times(client, published, uri: str, source: str, edited: str, rounds: int, version: int):
    """Publish latency over ``rounds`` changes (edited, back, edited...), and code-action latency after each."""
    diagnostics_times, action_times = [], []
    for round_ in range(rounds):
        # A change, then a save: publishes at once for the new text (no typing pause), so lint runs each time.
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version + round_),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited if round_ % 2 == 0 else source)]))
        t = time.perf_counter()
        client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
        params = await published.get()
        diagnostics_times.append(time.perf_counter() - t)
        if params.diagnostics:
            t = time.perf_counter()  # what the editor asks on every cursor move: quick fixes for the line
            await client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), range=params.diagnostics[0].range,
                context=types.CodeActionContext(diagnostics=[params.diagnostics[0]])))
            action_times.append(time.perf_counter() - t)
    return diagnostics_times, action_times


async def _diagnostics(client, published, big: Path, args, hover_times, hint_times) -> None:
    big_uri = big.as_uri()
    source = big.read_text()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=big_uri, language_id="python", version=1, text=source)))
    first = await published.get()
    rounds = args.diagnostics_rounds
    body, header = body_edit(source), header_edit(source)
    diagnostics_times, action_times = await _publish_times(client, published, big_uri, source, body, rounds, 2)
    header_times, _ = await _publish_times(client, published, big_uri, source, header, max(10, rounds // 5), 2 + rounds)

    lint_times = [t / 1000 for t in edit_times(lint_source, source, body, rounds)]  # the server's own work, with its cache
    full_times, parse_times = [], []
    for _ in range(max(10, rounds // 5)):
        t = time.perf_counter()
        lint_source(source, str(big))  # a first lint (no cache): what opening the file costs
        full_times.append(time.perf_counter() - t)
        t = time.perf_counter()  # the floor any Python linter pays, under the same load
        ast.parse(source)
        parse_times.append(time.perf_counter() - t)

    lines = source.count("\n")
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, load average before: {args.load_before}, "
          f"after: {os.getloadavg()[0]:.2f}")
    if hover_times:
        print(summary("hover (1M-entry capture loaded)", hover_times))
        print(summary("inlay hints, whole file", hint_times))
    print(summary(f"diagnostics after an edit, {lines} lines ({len(first.diagnostics)} findings)", diagnostics_times))
    print(summary("  lint_source with the cache, same edits (CPU)", lint_times))
    print(summary("diagnostics after an edit of the imports", header_times))
    print(summary("lint_source without a cache (first lint)", full_times))
    print(summary("  ast.parse alone, same text", parse_times))
    if action_times:
        print(summary(f"code actions on a finding, {lines} lines", action_times))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", nargs="?", help="the 1,000,000-entry snapshot pickle (benchmarks/record_million.py); "
                        "without it the capture requests are not timed")
    parser.add_argument("--file", help="time diagnostics on this file instead of the assembled 5,000-line one")
    parser.add_argument("--total-memory", default="150109880320", help="the recording GPU's memory (H200: 150109880320)")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--diagnostics-rounds", type=int, default=50)
    arguments = parser.parse_args()
    arguments.load_before = f"{os.getloadavg()[0]:.2f}"
    asyncio.run(main(arguments))
