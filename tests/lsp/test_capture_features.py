"""End to end over stdio: a real capture (recorded on an H200) loaded into the real server.

The captures' frames name the recording machine's paths (/work/main/scenarios/...); the server
maps them by path suffix onto a workspace folder that holds a copy of scenarios/, so every figure
below is proven to land on this workspace's files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from lsp_helpers import CAPTURES, REPO, execute, open_document, plain, replace_range
from pytest_lsp import LanguageClient

RETAINED = CAPTURES / "retained_references"
# scenarios/retained_references.py, 0-based: 11 build_model's .cuda(), 14 `def evaluate`,
# 18 x = torch.randn(...), 19 out = model(x) (the failing request), 20 outputs.append(out)
BUILD, DEF_EVALUATE, RANDN, MODEL, APPEND = 11, 14, 18, 19, 20


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    return tmp_path


def _uri(workspace: Path, name: str = "retained_references.py") -> str:
    return (workspace / "scenarios" / name).as_uri()


async def _open_scenario(client: LanguageClient, workspace: Path, name: str = "retained_references.py"):
    text = (workspace / "scenarios" / name).read_text()
    await open_document(client, _uri(workspace, name), text)
    return text


async def _hints(client: LanguageClient, uri: str) -> dict[int, types.InlayHint]:
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=10_000, character=0)),
    ))
    return {hint.position.line: hint for hint in hints or []}


async def _hover(client: LanguageClient, uri: str, line: int) -> types.Hover | None:
    return await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=4)))


async def _open_capture(client: LanguageClient, path: Path, **extra) -> dict:
    return await execute(client, "vramlens.openCapture", {"path": str(path), **extra})


@pytest.mark.asyncio
async def test_open_capture_shows_hints_hover_lens_and_the_oom_diagnostic(client: LanguageClient, workspace: Path):
    text = await _open_scenario(client, workspace)
    uri = _uri(workspace)
    outcome = await _open_capture(client, RETAINED)
    assert outcome["ok"] is True, outcome
    assert "retained_references" in outcome["message"] and "retained_references.py:20" in outcome["message"]
    assert outcome["workspaceFolder"] == workspace.as_uri()

    hints = await _hints(client, uri)
    assert set(hints) == {BUILD, RANDN, MODEL, APPEND}
    # The line that keeps the memory carries the figure; the lines that allocated it say where it is kept.
    assert hints[APPEND].label == "keeps 2.66 GiB · 90% ↑"  # short: the words are in its tooltip
    assert hints[MODEL].label == "2.63 GiB · 2.39 GiB kept by outputs"
    assert hints[RANDN].label == "304.00 MiB · 272.00 MiB kept by outputs"  # the graph of `out` saved x
    assert "↑" not in hints[BUILD].label
    model_line = text.splitlines()[MODEL]
    assert hints[MODEL].position == types.Position(line=MODEL, character=len(model_line))
    assert hints[MODEL].padding_left is True

    hover = await _hover(client, uri, MODEL)
    value = hover.contents.value
    kept, headline, blocks, _, call_path, path_title, _, links = value.split("\n")
    assert kept == "**Allocated here, kept by `outputs` at line 21**  "
    assert headline == "**2.63 GiB live at the OOM · 89% of live memory · growing, +2.39 GiB across steps**  "
    # The blocks live at the OOM (largest share of the bytes first), then the run's totals.
    assert blocks == ("57 blocks live: 64.00 MiB ×37, 16.00 MiB ×18, 32.00 MiB ×1 and 1 more · "
                      "57 allocations, 2.63 GiB over the run")
    assert path_title == "*largest live stack*"  # the path is the live bytes' own, not the first allocation's
    assert call_path.startswith(f"[retained\\_references.py:20]({_uri(workspace)}#L20) `evaluate` › +4 torch frames › ")
    assert call_path.rstrip().endswith("`linear.py:134` `forward`")  # the capture's torch is not the one here: no link
    assert links.startswith("[Show in report](command:vramlens.showMemoryReport?")
    assert "[Confirm the diagnosis](command:vramlens.runConfirmation?" in links
    assert hints[MODEL].tooltip.value == value
    stored = (await _hover(client, uri, APPEND)).contents.value  # it allocated nothing, yet it keeps the memory
    # The words of the CLI's line to change (rendering/storing_view.py), the holder as code.
    assert stored.startswith("**Keeps 2.66 GiB alive in `outputs`, 2.66 GiB of it from earlier steps** — the line to change")
    assert f"allocated at [retained\\_references.py:20]({_uri(workspace)}#L20)" in stored
    assert "What to try: Stop outputs from keeping every step's tensors at retained_references.py:21" in stored

    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    assert [lens.range.start.line for lens in lenses] == [APPEND]  # the line to change, not the function's def
    assert lenses[0].command.command == "vramlens.showReport"
    assert lenses[0].command.title == ("▲ keeps 2.66 GiB alive in outputs, 2.66 GiB of it from earlier steps — the line to "
                                       "change · show memory report")

    diagnostics = {d.code: d for d in client.diagnostics[uri]}
    oom = diagnostics["VL-OOM"]
    assert oom.severity == types.DiagnosticSeverity.Error and oom.range.start.line == MODEL
    assert oom.message == ("CUDA out of memory: a 64.00 MiB request failed here, with 2.95 GiB allocated and 2.96 GiB "
                           "reserved under the 3.00 GiB cap (1.27 GiB more outside PyTorch). Tensors from earlier "
                           "iterations stay referenced (retained_references, high confidence).")
    assert len(oom.message.split()) < 40  # it leads every hover on the line


@pytest.mark.asyncio
async def test_the_hover_unfolds_torch_frames_on_demand(client: LanguageClient, workspace: Path):
    await _open_scenario(client, workspace)
    uri = _uri(workspace)
    assert (await _open_capture(client, RETAINED))["ok"] is True
    folded = (await _hover(client, uri, MODEL)).contents.value
    links = folded.rsplit("\n", 1)[1]
    assert "+4 torch frames" in folded and "Whole call path" not in folded
    assert "[Show torch frames](command:vramlens.showTorchFrames?" in links
    assert "Show torch frames" not in (await _hover(client, uri, RANDN)).contents.value  # no torch frame on its path

    shown = await execute(client, "vramlens.showTorchFrames", {"workspaceFolder": workspace.as_uri(), "show": True})
    assert shown["ok"] is True, shown
    unfolded = (await _hover(client, uri, MODEL)).contents.value
    assert unfolded.startswith(folded.rsplit("\n", 1)[0])  # the usual hover first, then the whole path
    whole = unfolded.split("**Whole call path** (largest live stack, torch frames unfolded)  \n", 1)[1].split("\n\n")[0]
    frames = whole.split("\n")
    assert len(frames) == 6 and frames[0].startswith(f"1. [`retained_references.py:20`]({_uri(workspace)}#L20) `evaluate`")
    assert frames[-1] == "6. `linear.py:134` `forward`" and all("torch" not in f or "`" in f for f in frames)
    assert "[Fold torch frames](command:vramlens.showTorchFrames?" in unfolded.rsplit("\n", 1)[1]
    hints = await _hints(client, uri)
    assert hints[MODEL].tooltip.value == unfolded  # the hint's tooltip is the hover

    assert (await execute(client, "vramlens.showTorchFrames", {"show": False}))["ok"] is True
    assert (await _hover(client, uri, MODEL)).contents.value == folded
    refused = await execute(client, "vramlens.showTorchFrames", {"show": "yes"})
    assert refused["ok"] is False and "`show`" in refused["message"]


@pytest.mark.asyncio
async def test_retained_graph_finding_carries_the_measured_growth(client: LanguageClient, workspace: Path):
    await _open_scenario(client, workspace)
    uri = _uri(workspace)
    before = {d.code: d for d in client.diagnostics[uri]}
    assert "Measured" not in before["VL102"].message  # static only, until a capture says more
    await _open_capture(client, RETAINED)
    finding = {d.code: d for d in client.diagnostics[uri]}["VL102"]
    assert finding.range.start.line == APPEND
    assert finding.message.startswith(before["VL102"].message)
    assert finding.message.endswith("Measured: this line grew by 2.66 GiB across the run (2.66 GiB live).")


@pytest.mark.asyncio
async def test_report_notification_carries_report_and_series(client: LanguageClient, workspace: Path):
    outcome = await _open_capture(client, RETAINED)
    assert outcome["ok"]
    report = client.reports[-1]
    assert report["title"] == "retained_references.py — out of memory (request 64.00 MiB)"
    assert report["analysis"]["cause"] == "retained_references"
    top = report["lines"][0]
    assert {key: top[key] for key in ("label", "uri", "line", "cell", "liveBytes", "share")} == {
        "label": "retained_references.py:20", "uri": _uri(workspace), "line": MODEL, "cell": None,
        "liveBytes": 2819620864, "share": 0.8889}
    # The per-line table shows the hint's own figure, and the line's live bytes at each step's end.
    assert top["cells"]["live"] == top["figure"] == "2.63 GiB · 89% ↑"
    assert [column["key"] for column in report["lineColumns"]] == ["live", "peak", "growth", "allocated"]
    assert len(top["steps"]) >= 2 and top["steps"][-1] > top["steps"][0] and top["growthPerStep"] > 0
    assert top["pathTitle"] == "largest live stack" and top["path"][-1].endswith("forward")
    assert report["verdict"]["line"]["place"] == "retained_references.py:21"  # the line that keeps it
    series = report["series"]
    assert series["allocated"][0][0] == 0.0 and len(series["allocated"]) == len(series["reserved"]) > 100
    assert max(point[1] for point in series["allocated"]) == report["analysis"]["memory"]["peak_allocated"]
    assert series["driverUsed"] and all(t >= -5 for t, _ in series["driverUsed"])
    assert series["oomAt"] == pytest.approx(0.137428, abs=1e-6)
    # The reading the OOM observer asked for (0.6 ms after the failure) sits on the OOM mark, with its value.
    meta = json.loads((RETAINED / "capture.json").read_text())
    (oom_reading,) = [s["device_used"] for s in meta["nvml"]["samples"] if s["phase"] == "oom"]
    assert [series["oomAt"], oom_reading] in series["driverUsed"]
    assert report["markdown"].startswith("# GPU memory report: retained_references.py")
    for folder in (meta["cwd"], meta["source_root"], str(workspace)):  # where it was recorded, where it is here
        assert f"{folder}/" not in report["markdown"], folder
    assert report["ranks"] is None and report["experiment"] is None

    shown = await execute(client, "vramlens.showReport", {"redact": True})
    assert shown["ok"]
    redacted = client.reports[-1]
    assert redacted["redacted"] is True and redacted["lines"][0]["uri"] is None
    assert "/work/main" not in str(redacted) and str(workspace) not in str(redacted)


@pytest.mark.asyncio
async def test_export_and_clear(client: LanguageClient, workspace: Path, tmp_path: Path):
    await _open_scenario(client, workspace)
    assert (await execute(client, "vramlens.showReport", {}))["ok"] is False  # nothing loaded yet
    await _open_capture(client, RETAINED)
    target = tmp_path / "out" / "report.md"
    exported = await execute(client, "vramlens.exportReport", {"path": str(target)})
    assert exported["ok"], exported
    assert "retained_references" in target.read_text() and "report-timeline.svg" in target.read_text()
    assert (tmp_path / "out" / "report-timeline.svg").read_text().startswith("<svg")

    cleared = await execute(client, "vramlens.clearCapture", {})
    assert cleared["ok"]
    assert await _hints(client, _uri(workspace)) == {}
    assert "VL-OOM" not in {d.code for d in client.diagnostics[_uri(workspace)]}


@pytest.mark.asyncio
async def test_raw_server_pickle_maps_by_file_name_suffix(client: LanguageClient, workspace: Path):
    await _open_scenario(client, workspace, "server_dump.py")
    total = (CAPTURES / "server_dump.total_memory").read_text().strip()
    outcome = await _open_capture(client, CAPTURES / "server_dump.pickle", totalMemory=total)
    assert outcome["ok"], outcome
    hints = await _hints(client, _uri(workspace, "server_dump.py"))
    # /srv/app/server_dump.py (as recorded) is this workspace's scenarios/server_dump.py
    assert hints[20].label == "keeps 1.39 GiB · 81% ↑"  # `responses[request_id] = model(features)` allocates and keeps
    assert hints[19].label.endswith("↑")


@pytest.mark.asyncio
async def test_lines_move_with_edits_above_and_changed_lines_go_stale(client: LanguageClient, workspace: Path):
    await _open_scenario(client, workspace)
    uri = _uri(workspace)
    await _open_capture(client, RETAINED)

    # Two lines inserted above everything: every figure moves two lines down.
    client.refreshes.clear()
    await replace_range(client, uri, (0, 0), (0, 0), "# one\n# two\n", version=2)
    hints = await _hints(client, uri)
    assert "vramlens/annotationsChanged" in client.refreshes
    assert set(hints) == {BUILD + 2, RANDN + 2, MODEL + 2, APPEND + 2}
    assert hints[MODEL + 2].label == "2.63 GiB · 2.39 GiB kept by outputs"
    assert hints[APPEND + 2].label.startswith("keeps 2.66 GiB")
    assert "2.63 GiB" in (await _hover(client, uri, MODEL + 2)).contents.value
    assert await _hover(client, uri, MODEL) is None
    annotations = plain(await client.protocol.send_request_async("vramlens/lineAnnotations", {"uri": uri}))["annotations"]
    assert [a["line"] for a in annotations] == [BUILD + 2, RANDN + 2, MODEL + 2, APPEND + 2]
    assert annotations[2]["text"] == hints[MODEL + 2].label and annotations[2]["stale"] is False
    assert annotations[2]["liveBytes"] == 2819620864 and annotations[2]["growing"] is False  # the growth is shown where kept
    assert annotations[3]["growing"] is True and annotations[3]["share"] > annotations[2]["share"]
    oom = await _published_oom(client, uri)
    assert oom.range.start.line == MODEL + 2

    # The measured line itself edited: its figure is withdrawn, the line is marked stale.
    line = MODEL + 2
    await replace_range(client, uri, (line, 8), (line, 22), "out = model(x * 2)", version=3)
    hints = await _hints(client, uri)
    assert hints[line].label == "stale · changed since the capture"
    assert hints[RANDN + 2].label == "304.00 MiB · 272.00 MiB kept by outputs"
    assert "changed since the capture" in (await _hover(client, uri, line)).contents.value
    assert await _published_oom(client, uri) is None  # no runtime diagnostic on a changed line
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    assert [lens.range.start.line for lens in lenses] == [APPEND + 2]


async def _published_oom(client: LanguageClient, uri: str) -> types.Diagnostic | None:
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return next((d for d in client.diagnostics[uri] if d.code == "VL-OOM"), None)


@pytest.mark.asyncio
async def test_broken_capture_is_one_sentence_and_the_server_goes_on(client: LanguageClient, workspace: Path, tmp_path: Path):
    broken = tmp_path / "broken.pickle"
    broken.write_bytes(RETAINED.joinpath("snapshot.pickle").read_bytes()[:5000])
    outcome = await _open_capture(client, broken)
    assert outcome["ok"] is False
    assert outcome["message"] == outcome["message"].strip() and "truncated or damaged" in outcome["message"]
    missing = await _open_capture(client, tmp_path / "nowhere")
    assert missing["ok"] is False and "Nothing at" in missing["message"]
    assert (await _open_capture(client, RETAINED))["ok"] is True  # still answering, and working


@pytest.mark.asyncio
async def test_an_exception_inside_a_handler_leaves_the_server_answering(client: LanguageClient, workspace: Path):
    await _open_capture(client, RETAINED)
    with pytest.raises(Exception):
        await client.protocol.send_request_async("vramlens/lineAnnotations", {"no-uri": 1})  # the handler raises
    await _open_scenario(client, workspace)
    assert MODEL in await _hints(client, _uri(workspace))
