"""End to end over stdio: the storing line's quick fix, on real captures recorded on an H200
(tests/fixtures/realworld; round 4's in-sample workloads) mapped onto copies of the scripts they ran (workloads/).

The census says what the holder keeps (its graphs, or the tensors themselves), the file must prove the edit
safe: the stored value a tensor, and no use of the holder that needs its graph (for ``.detach()``) or its
tensors on the GPU (for ``.detach().cpu()``). Copies of a script are changed only as a user would: the value
as the run computed it (``--fixed 0``), its type written down, or a later line that reads the list.
"""

from __future__ import annotations

import ast
import shutil
import tarfile
from pathlib import Path

import pytest
from lsprotocol import types
from lsp_helpers import REPO, execute, open_document, replace_range
from pytest_lsp import LanguageClient

from vramlens.lint import Edit, apply_edits

CORPUS = REPO / "tests" / "fixtures" / "realworld"
HISTORY_LINE = 28  # module_history.py, 0-based: `            self.history += [h]`
DECODE_LINE = 23  # decode_loop_grad.py, 0-based: `        all_logits.append(logits.clone() if fixed else logits)`
METRICS_LINE = 38  # metrics_dict.py, 0-based: `            metrics[step] = out`


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder


def _capture(tmp_path: Path, name: str) -> Path:
    """The capture folder of a real workload: round 4's are kept compressed."""
    if (CORPUS / name / "capture").exists():
        return CORPUS / name / "capture"
    with tarfile.open(CORPUS / "round4" / f"{name}.tar.xz") as bundle:
        bundle.extractall(tmp_path / "captures", filter="data")
    return tmp_path / "captures" / name / "capture"


def _script(root: Path, family: str, name: str, changes: dict[int, str] | None = None, after: str = "") -> Path:
    """The workload's script under ``root`` (as its neutral folder held it: ``<family>/<name>``), with lines
    replaced (0-based) and text added at its end."""
    lines = (REPO / "workloads" / family / name).read_text().split("\n")
    for number, text in (changes or {}).items():
        lines[number] = text
    path = root / family / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + after)
    return path


async def _storing_fixes(client: LanguageClient, path: Path, line: int, only: list[str] | None = None) -> list[types.CodeAction]:
    """The code actions asked for on ``line`` as VS Code asks (the line's diagnostics in the context), less
    lint's own (they are offered for a finding and say no figure)."""
    uri = path.as_uri()
    diagnostics = [d for d in client.diagnostics.get(uri, []) if d.range.start.line == line]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=line, character=4), end=types.Position(line=line, character=4)),
        context=types.CodeActionContext(diagnostics=diagnostics, only=only)))
    return [action for action in actions or [] if "frees the" in action.title]


def _applied(path: Path, action: types.CodeAction, text: str | None = None) -> str:
    text = path.read_text() if text is None else text
    edits = action.edit.changes[path.as_uri()]
    return apply_edits(text, [Edit(e.range.start.line + 1, e.range.start.character, e.range.end.line + 1,
                                   e.range.end.character, e.new_text) for e in edits])


async def _open(client: LanguageClient, capture: Path, script: Path) -> None:
    """Open the script, then the capture with its recorded paths mapped onto the script's copy."""
    await open_document(client, script.as_uri(), script.read_text())
    outcome = await execute(client, "vramlens.openCapture", {"path": str(capture), "sourceRoot": str(script.parents[1])})
    assert outcome["ok"] is True, outcome


@pytest.mark.asyncio
async def test_a_list_of_hidden_states_kept_on_the_gpu_is_moved_to_the_cpu(client: LanguageClient, workspace: Path,
                                                                           tmp_path: Path):
    # module_history_attr: `self.history += [h]` in forward keeps 32 hidden states (2.00 GiB); each carries its
    # graph, but the backward of every step already freed what the graphs saved: the tensors are the memory
    script = _script(workspace, "retention", "module_history.py")
    await _open(client, _capture(tmp_path, "module_history_attr"), script)
    fixes = await _storing_fixes(client, script, HISTORY_LINE)
    assert [fix.title for fix in fixes] == [
        "Store `h` on the CPU (.detach().cpu()): frees the 2.00 GiB model.history holds "
        "on the GPU"]
    assert fixes[0].kind == types.CodeActionKind.QuickFix and fixes[0].is_preferred
    (edit,) = fixes[0].edit.changes[script.as_uri()]
    assert (edit.range.start, edit.range.end, edit.new_text) == (
        types.Position(HISTORY_LINE, 30), types.Position(HISTORY_LINE, 30), ".detach().cpu()")
    fixed = _applied(script, fixes[0])
    ast.parse(fixed)
    assert fixed.split("\n")[HISTORY_LINE] == "            self.history += [h.detach().cpu()]"
    assert await _storing_fixes(client, script, HISTORY_LINE - 4) == []  # only on the storing line
    assert len(await _storing_fixes(client, script, HISTORY_LINE, only=["quickfix"])) == 1
    assert await _storing_fixes(client, script, HISTORY_LINE, only=["source.fixAll.vramlens"]) == []
    # The storing line itself changed since the capture: its figures, and its edit, no longer apply
    await replace_range(client, script.as_uri(), (HISTORY_LINE, 29), (HISTORY_LINE, 30), "h, h", version=2)
    assert await _storing_fixes(client, script, HISTORY_LINE) == []


@pytest.mark.asyncio
async def test_the_offer_goes_when_a_later_line_backpropagates_the_list(client: LanguageClient, workspace: Path,
                                                                      tmp_path: Path):
    script = _script(workspace, "retention", "module_history.py")
    await _open(client, _capture(tmp_path, "module_history_attr"), script)
    assert len(await _storing_fixes(client, script, HISTORY_LINE)) == 1
    # Typed since the capture, below the storing line: the kept states are now stacked and differentiated,
    # which needs their graphs and tensors (on the GPU, beside the model)
    end = len(script.read_text().split("\n")) - 1
    await replace_range(client, script.as_uri(), (end, 0), (end, 0),
                        "\ndef regularise(model):\n    torch.stack(model.history).pow(2).mean().backward()\n", version=2)
    assert await _storing_fixes(client, script, HISTORY_LINE) == []


@pytest.mark.asyncio
async def test_graphs_kept_by_a_list_are_dropped_with_detach(client: LanguageClient, workspace: Path, tmp_path: Path):
    # hf_decode_loop_grad: every decoding step's logits appended with their graph (grad mode on), the graphs
    # keeping more than the logits themselves. The copy stores what the run stored (`--fixed 0`) and writes the
    # logits' type down: `model(tokens).logits` is an attribute of an object the file cannot see
    as_run = {DECODE_LINE - 1: "            logits: torch.Tensor = model(tokens).logits[:, -1, :]",
              DECODE_LINE: "        all_logits.append(logits)"}
    script = _script(workspace, "hf_generate", "decode_loop_grad.py", as_run)
    await _open(client, _capture(tmp_path, "hf_decode_loop_grad"), script)
    fixes = await _storing_fixes(client, script, DECODE_LINE)
    # `.detach().cpu()` would be the census' second choice, but the file reads the list element by element
    # (`logits.max(dim=-1)` in main): only what keeps the values where they are is offered
    assert [fix.title for fix in fixes] == [
        "Store `logits` detached (.detach()): keeps the values, frees the 2.48 GiB their autograd graphs hold in "
        "__main__.all_logits"]
    fixed = _applied(script, fixes[0])
    ast.parse(fixed)
    assert fixed.split("\n")[DECODE_LINE] == "        all_logits.append(logits.detach())"


@pytest.mark.asyncio
async def test_no_edit_where_the_graph_is_needed_or_the_value_is_not_proven_a_tensor(client: LanguageClient,
                                                                                   workspace: Path, tmp_path: Path):
    capture = _capture(tmp_path, "hf_decode_loop_grad")
    as_run = {DECODE_LINE - 1: "            logits: torch.Tensor = model(tokens).logits[:, -1, :]",
              DECODE_LINE: "        all_logits.append(logits)"}
    script = _script(workspace / "as_run", "hf_generate", "decode_loop_grad.py", as_run)
    await _open(client, capture, script)
    assert len(await _storing_fixes(client, script, DECODE_LINE)) == 1
    # The same file, stacking the kept logits into a loss it backpropagates: `.detach()` would break it
    backward = _script(workspace / "backward", "hf_generate", "decode_loop_grad.py", as_run,
                       after="\n\ndef tune(model):\n    torch.stack(all_logits).logsumexp(-1).mean().backward()\n")
    # The value as the script writes it: `logits.clone() if fixed else logits` may be either
    unproven = _script(workspace / "unproven", "hf_generate", "decode_loop_grad.py")
    for copy in (backward, unproven):
        await _open(client, capture, copy)
        assert await _storing_fixes(client, copy, DECODE_LINE) == [], copy


@pytest.mark.asyncio
async def test_a_dict_of_model_outputs_gets_no_edit(client: LanguageClient, workspace: Path, tmp_path: Path):
    # metrics_dict_outputs: `metrics[step] = out` keeps each step's whole output object (a transformers
    # ModelOutput), not a tensor: `.detach()` does not exist on it. The same folder's module_history_attr is
    # offered its edit, so the lack here is the proof's, not the server's
    history = _script(workspace, "retention", "module_history.py")
    await _open(client, _capture(tmp_path, "module_history_attr"), history)
    assert len(await _storing_fixes(client, history, HISTORY_LINE)) == 1
    metrics = _script(workspace, "retention", "metrics_dict.py")
    await _open(client, _capture(tmp_path, "metrics_dict_outputs"), metrics)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=metrics.as_uri()), position=types.Position(METRICS_LINE, 12)))
    assert "the line to change" in hover.contents.value  # it is the storing line
    assert await _storing_fixes(client, metrics, METRICS_LINE) == []


@pytest.mark.asyncio
async def test_the_fix_a_confirming_run_measured_says_so(client: LanguageClient, workspace: Path, tmp_path: Path):
    # tests/fixtures/measured_fix: the same workload recorded with `run --confirm`, whose experiment ran the
    # script with line 29 changed to the first of these fixes and fitted
    with tarfile.open(REPO / "tests" / "fixtures" / "measured_fix" / "module_history_attr.tar.xz") as bundle:
        bundle.extractall(tmp_path / "measured", filter="data")
    script = _script(workspace, "retention", "module_history.py")
    await _open(client, tmp_path / "measured" / "mh" / "capture", script)
    fixes = await _storing_fixes(client, script, HISTORY_LINE)
    assert [fix.title for fix in fixes] == [
        "Store `h` on the CPU (.detach().cpu()): frees the 1.94 GiB model.history holds on the GPU "
        "(measured: the run with it fitted)"]


@pytest.mark.asyncio
async def test_an_unmeasured_capture_s_fix_claims_no_measurement(client: LanguageClient, workspace: Path, tmp_path: Path):
    script = _script(workspace, "retention", "module_history.py")
    await _open(client, _capture(tmp_path, "module_history_attr"), script)
    assert all("measured" not in fix.title for fix in await _storing_fixes(client, script, HISTORY_LINE))
