"""The kit every command is made with: its argument object parsed into a structure, the answer it
gives (a CommandResult ``{ok, message, capture?, workspaceFolder?}``, docs/lsp-protocol.md), the guard
that turns a failure into one sentence, and loading a capture into the server.
"""

from __future__ import annotations

import asyncio
import functools
import os
import traceback
from pathlib import Path
from typing import TypeVar

import attrs
import cattrs
from cattrs.errors import ClassValidationError
from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.uris import to_fs_path

from vramlens.analysis.experiments.experiment import chosen_sentence
from vramlens.capture import CaptureError
from vramlens.lsp.capture_store import LoadedCapture
from vramlens.analysis.rendering.verdict_view import cause_text
from vramlens.lsp.load_worker import load_in_worker
from vramlens.lsp.report_payload import report_payload
from vramlens.lsp.server import VramLensServer  # at run time: pygls reads the commands' annotations
from vramlens.safe_text import one_line

REPORT = "vramlens/report"
REFUSAL = "refusal"  # an argument field's metadata: the sentence when the client sent it with the wrong type
Shape = TypeVar("Shape")


class Refused(Exception):
    """An argument the command cannot use; the message is the sentence the client is answered."""


def given(refusal: str | None, default=None):
    """An argument field: absent means ``default``; of the wrong type, the command answers ``refusal``
    (None: a value of the wrong type counts as not given, and the command says what it needs)."""
    return attrs.field(default=default, metadata={REFUSAL: refusal})


@attrs.frozen
class FolderArguments:
    """The arguments of a command on the folder's loaded capture."""

    workspace_folder: str | None = given("Give the workspace folder as `workspaceFolder`, a folder URI.")


def _exactly(kind: type):
    """JSON values as they came: "3" is no number and 1 no flag (cattrs would convert them)."""

    def structure(value, _type):
        if type(value) is not kind:
            raise TypeError(f"{value!r} is not a {kind.__name__}")
        return value

    return structure


# lsprotocol's converter, which names fields as LSP does (``workspace_folder`` is ``workspaceFolder``), made strict.
_converter = get_converter(cattrs.Converter(detailed_validation=True))
for _kind in (str, int, bool):
    _converter.register_structure_hook(_kind, _exactly(_kind))


def argument_object(arguments: tuple) -> dict:
    """The command's one argument object as the client sent it ({} when it sent none)."""
    return arguments[0] if arguments and isinstance(arguments[0], dict) else {}


def parse(arguments: tuple, shape: type[Shape]) -> Shape:
    """The command's one argument object as ``shape``; Refused with the field's sentence when a value is unusable."""
    sent = argument_object(arguments)
    try:
        return _converter.structure(sent, shape)
    except ClassValidationError as error:
        with_names, _ = error.group_exceptions()
        fields = {field.name: field for field in attrs.fields(shape)}
        unusable = [fields.get(note.name) for _error, note in with_names]
        for field in unusable:
            if field is not None and field.metadata.get(REFUSAL):
                raise Refused(field.metadata[REFUSAL]) from None
        if unusable and all(field is not None for field in unusable):  # each may count as not given
            left_out = {_lsp_name(field.name) for field in unusable}
            return _converter.structure({key: value for key, value in sent.items() if key not in left_out}, shape)
        raise Refused(f"The arguments cannot be read ({error.exceptions[0]}).") from None


def _lsp_name(name: str) -> str:
    """A field's name in the argument object, as lsprotocol's converter reads it (``workspace_folder``: ``workspaceFolder``)."""
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def result(ok: bool, message: str, loaded: LoadedCapture | None = None, folder: str | None = None) -> dict:
    """The CommandResult; its message is shown as text, so it is one line without control characters."""
    return {"ok": ok, "message": one_line(message), "capture": loaded.path if loaded else None,
            "workspaceFolder": loaded.folder_uri if loaded else folder}


def command_guard(function):
    """A command that cannot use its arguments, or fails unexpectedly, answers ok: false with one sentence;
    the server goes on."""

    @functools.wraps(function)
    async def guarded(ls: VramLensServer, *arguments):
        try:
            return await function(ls, *arguments)
        except (CaptureError, Refused) as error:
            return result(False, str(error))
        except Exception as error:  # noqa: BLE001 - reported, logged, survived
            ls.log(traceback.format_exc(), types.MessageType.Error)
            return result(False, f"{function.__name__} failed unexpectedly ({type(error).__name__}: {error}); "
                                 "the details are in the VRAM Lens log.")

    return guarded


def with_loaded_capture(shape: type):
    """A command on the folder's loaded capture (``workspaceFolder``, else any), its arguments parsed as
    ``shape``: without a capture it says so."""

    def decorate(function):
        async def on_capture(ls: VramLensServer, *arguments) -> dict:
            args = parse(arguments, shape)
            loaded = ls.captures.get(args.workspace_folder)
            if loaded is None:
                return result(False, "No capture is loaded: run “Diagnose CUDA memory” or open a capture first.")
            return await function(ls, args, loaded)

        on_capture.__name__ = function.__name__  # not functools.wraps: pygls reads the outer signature
        return on_capture

    return decorate


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


def capture_loaded(ls: VramLensServer, loaded: LoadedCapture) -> None:
    """A capture was loaded, replaced, or shows another rank: figures move, diagnostics and the report follow."""
    ls.captures.put(loaded)
    ls.captures_changed()
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
