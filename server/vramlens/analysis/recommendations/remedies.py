"""Framework remedies: the fix in the library's own terms, chosen by evidence in the trace and the census.

A generic ".detach() what you keep" is right but not what a Trainer user changes; they set
``eval_accumulation_steps``. Each row of ``REMEDIES`` says which library frames must be on the
path of the memory in question (the loop that drives the steps, the call paths of the lines that
grew or hold most), for which causes, and which call of the user's own code the advice points at
(``TrainingArguments(``, ``torch.load(``): advice never points at a library line. docs/remedies.md
is the same table in words. A fix a confirming run measured on this script comes before any row.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from vramlens.analysis.attribution.storing import SourceFacts
from vramlens.analysis.load.sources import place_of
from vramlens.analysis.model import Action, LineStat, Recommendation, StoringLine
from vramlens.units import count_of
from vramlens.units import format_bytes as fmt


@dataclass(frozen=True)
class Remedy:
    """A library's own remedy, advised when the memory's path runs through one of its functions."""

    name: str
    library: str
    frames: tuple[str, ...]  # a library file (as its path ends) that must be on the memory's path
    functions: tuple[str, ...]  # ...in one of these functions (empty: any)
    causes: tuple[str, ...]
    action: str
    reason: str
    anchors: tuple[str, ...] = ()  # calls of the user's code to point at, the first found wins
    storing: bool = False  # point at the storing line when there is one
    needs_storing_in: tuple[str, ...] = ()  # ...and only when the storing line is in a method of these names
    needs_cache: bool | None = None  # only when the growth is (True) or is not (False) a cache growing as designed
    needs_storing: bool = False  # only when a storing line of the user's code was found
    unless: tuple[str, ...] = ()  # not when one of these remedies was chosen (a Trainer runs on accelerate)
    or_copy: bool = False  # also chosen when a holder repeats a model's weights (a checkpoint's second copy)


REMEDIES = (
    Remedy(
        "trainer_eval_gather", "transformers Trainer", ("transformers/trainer.py",),
        ("evaluate", "evaluation_loop", "predict", "prediction_loop", "prediction_step"), ("retained_references",),
        "Set eval_accumulation_steps in TrainingArguments (eval_accumulation_steps=1 moves each batch's predictions to "
        "the CPU), or prediction_loss_only=True when no compute_metrics needs the logits; "
        "preprocess_logits_for_metrics can shrink them (e.g. to argmax ids) before they are gathered.",
        "Trainer.evaluate() gathers every batch's predictions on the GPU until the evaluation ends when "
        "eval_accumulation_steps is unset.",
        anchors=("TrainingArguments", "Seq2SeqTrainingArguments", "Trainer", "Seq2SeqTrainer")),
    Remedy(
        "lightning_outputs", "Lightning", ("lightning/pytorch/", "pytorch_lightning/"), (), ("retained_references",),
        "Do not keep each step's outputs on the LightningModule: update a metric per step (torchmetrics' update/compute), "
        "or keep only .detach().cpu() of what the epoch-end hook needs, and clear the list there.",
        "The list on self lives as long as the module, so every batch's outputs (with their graphs in training) stay "
        "on the GPU until the hook that reads them.",
        storing=True,
        needs_storing_in=("training_step", "validation_step", "test_step", "predict_step", "on_train_batch_end",
                          "on_validation_batch_end", "on_test_batch_end")),
    Remedy(
        "accelerate_eval", "accelerate", ("accelerate/",), (), ("retained_references",),
        "Evaluate under torch.no_grad() (accelerate leaves grad mode as it is), add loss.item() or loss.detach() to "
        "running sums, and gather per batch with accelerator.gather_for_metrics(...).cpu().",
        "A running sum or list of tensors made with grad mode on keeps every batch's autograd graph.",
        storing=True, needs_storing=True, unless=("trainer_eval_gather", "lightning_outputs")),
    Remedy(
        "generate_cache", "transformers generate", ("transformers/generation/utils.py",), (), ("working_set",),
        "Size generate()'s cache: fewer num_beams or sequences per batch, a smaller max_new_tokens, or "
        "cache_implementation=\"static\" with its size set to the prompt plus max_new_tokens (\"offloaded\" or "
        "\"quantized\" trade speed for memory).",
        "The KV cache grows by one token per decoding step for every beam and sequence.",
        anchors=("generate",), needs_cache=True),
    Remedy(
        "torch_load_gpu", "torch.load", ("torch/serialization.py",), ("load", "_load"), ("working_set", "retained_references"),
        "Load the checkpoint onto the CPU: torch.load(..., map_location=\"cpu\") (or mmap=True), then "
        "model.load_state_dict(state) and drop the state dict.",
        "torch.load puts a GPU-saved state dict back on the GPU, beside the model it is meant for: a second copy of "
        "the weights.",
        anchors=("load",), or_copy=True),
    Remedy(
        "dataloader_pin_memory", "torch DataLoader", ("torch/utils/data/_utils/pin_memory.py",), (),
        ("outside_allocator", "working_set"),
        "As an experiment, set pin_memory=False on the DataLoader (or fewer workers / a smaller prefetch_factor), "
        "and measure the driver-visible memory.",
        "Pinned host buffers are page-locked through the CUDA driver and count outside PyTorch's allocator.",
        anchors=("DataLoader",)),
)


def _path_text(lines: list[LineStat], steps, growth) -> list[str]:
    """The frames the memory went through: the loop driving the steps, the call paths of the lines
    that grew or hold most, the sites that allocated the growth."""
    texts = [steps.driver] if steps is not None and steps.driver else []
    user = [line for line in lines if line.path is not None]
    chosen = [line for line in user if line.growing][:3] or user[:2]
    texts += [frame for line in chosen for frame in line.call_path]
    if growth is not None:
        texts += [f"{site[0]}:{site[1]} {site[2]}" for site, _size in growth.sites[:5]]
    return [text.replace("\\", "/") for text in texts]


def _seen(remedy: Remedy, frames: list[str]) -> bool:
    for frame in frames:
        where, _, function = frame.partition(" ")
        if any(part in where for part in remedy.frames) and (not remedy.functions or function in remedy.functions):
            return True
    return False


def _anchor(remedy: Remedy, lines: list[LineStat], storing: list[StoringLine], sources: SourceFacts | None):
    """(recorded path, line) of the user's code the advice points at, or None."""
    if remedy.storing and storing:
        return storing[0].path, storing[0].line
    if sources is None:
        return None
    files = list(dict.fromkeys(line.path for line in lines if line.path is not None))
    for callee in remedy.anchors:
        for recorded in files:
            facts = sources.of(recorded)
            calls = sorted(facts.calls.get(callee, ())) if facts else []
            if calls:
                # of several calls, the one on a line that allocated (torch.load's, not the saving script's)
                allocating = [line.line for line in lines if line.path == recorded and line.line in calls]
                return recorded, (allocating or calls)[0]
    return None


def library_remedies(cause: str, lines: list[LineStat], facts, sources: SourceFacts | None) -> list[Recommendation]:
    """The remedies whose evidence this run shows, each pointing at the user's line to change."""
    steps, growth = getattr(facts, "steps", None), getattr(facts, "growth", None)
    storing = list(getattr(facts, "storing", None) or [])
    census = getattr(facts, "census", None)
    copied = any(holder.copy_of for holder in (census.holders if census else ()))
    frames = _path_text(lines, steps, growth)
    chosen, chosen_names = [], set()
    for remedy in REMEDIES:
        if cause not in remedy.causes and not (remedy.or_copy and copied):  # a second copy of the weights: any outcome
            continue
        if remedy.needs_cache is not None and bool(growth and growth.intended_cache) != remedy.needs_cache:
            continue
        if not (_seen(remedy, frames) or (remedy.or_copy and copied)):
            continue
        if (remedy.needs_storing and not storing) or any(name in chosen_names for name in remedy.unless):
            continue
        if remedy.needs_storing_in and not (storing and _in_method(storing[0], sources, remedy.needs_storing_in)):
            continue
        where = _anchor(remedy, lines, storing, sources)
        actions = []
        if where is not None:
            label = place_of(where[0], where[1], getattr(facts, "cells", None))
            actions.append(Action("open_line", f"Open {label}", {"path": where[0], "line": where[1]}))
        reason = remedy.reason
        copy = next((holder for holder in (census.holders if census else ()) if holder.copy_of), None)
        if remedy.or_copy and copy is not None:
            reason += (f" Here {copy.root} held {fmt(copy.bytes)} in {count_of(copy.tensors, 'tensor')} shaped like "
                       f"{copy.copy_of}'s parameters.")
        chosen.append(Recommendation(f"{remedy.library}: {remedy.action}", reason, actions=actions, remedy=remedy.name))
        chosen_names.add(remedy.name)
    return chosen


def _in_method(storing: StoringLine, sources: SourceFacts | None, names: tuple[str, ...]) -> bool:
    facts = sources.of(storing.path) if sources is not None else None
    store = next((s for s in (facts.stores if facts else ()) if s.line == storing.line), None)
    return store is not None and store.function in names


def measured_fixes(meta: dict, storing: list[StoringLine] | None = None) -> list[Recommendation]:
    """A change a confirming run on this script measured to fit (capture.json ``confirmation``'s table):
    it comes before every inferred remedy. The storing line's own fix, measured as an edit of that line
    (experiments/store_fix.py), comes first of all and links to the line."""
    record = meta.get("confirmation") if isinstance(meta, dict) else None
    rows = record.get("table") if isinstance(record, dict) else None
    if not isinstance(rows, list) or len(rows) < 2 or not isinstance(rows[0], dict):
        return []
    baseline = rows[0]
    if not baseline.get("ooms"):
        return []  # the baseline fitted too: nothing was fixed
    as_given = f"where the run as given ran out of memory ({baseline.get('ooms')}/{baseline.get('runs')})"
    edits, others = [], []
    for row in rows[1:]:
        if not (isinstance(row, dict) and row.get("ooms") == 0 and row.get("runs") and isinstance(row.get("label"), str)):
            continue
        edit = row.get("edit") if isinstance(row.get("edit"), dict) else None
        if edit is not None:
            edits.append(_measured_edit(edit, row, baseline, as_given, storing or []))
        else:
            others.append(Recommendation(
                f"Measured on this script: {row['label']} ran without an OOM ({row['runs']} run(s)), {as_given}.",
                "A confirming run measured it; the advice that follows is inferred from the capture."))
    return [fix for fix in edits if fix is not None] + others


def _measured_edit(edit: dict, row: dict, baseline: dict, as_given: str, storing: list[StoringLine]) -> Recommendation | None:
    after, line = edit.get("after"), edit.get("line")
    if not isinstance(after, str) or not isinstance(line, int):
        return None
    # the storing line the edit rewrote, named as the rest of the advice names it (a recorded path)
    target = next((s for s in storing if s.line == line and edit.get("path") in (s.local_path, s.path)), None)
    label = target.label if target is not None else f"line {line}"
    peaks = ""
    if isinstance(row.get("peak_allocated"), int) and isinstance(baseline.get("peak_allocated"), int):
        peaks = f" (peak allocated {fmt(baseline['peak_allocated'])} before the OOM, {fmt(row['peak_allocated'])} with it)"
    actions = [Action("open_line", f"Open {label}", {"path": target.path, "line": line})] if target is not None else []
    runs = (baseline.get("capture"), row.get("capture"))
    command = shlex.join(["vramlens", "diff", *runs]) if all(isinstance(run, str) for run in runs) else None
    return Recommendation(
        f"Change {label} to `{after.strip()}`: measured on this script, the run with it ran without an OOM "
        f"({row['runs']} run(s)), {as_given}{peaks}.",
        "A confirming run executed the script with this one line changed (the file itself untouched); "
        "`vramlens diff` of the two runs' captures shows what it removed.",
        actions=actions, command=command, measured_edit=after.strip())
