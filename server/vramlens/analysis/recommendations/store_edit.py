"""The edit the storing line's quick fix may make, chosen by what the census saw the holder keep.

A holder keeps memory in two ways, and each has its own cure:

- through its tensors' autograd graphs (the saved activations of every step that made them): ``.detach()`` of
  the stored value keeps the values and drops the graphs;
- through the tensors themselves, on the GPU: ``.detach().cpu()`` keeps the values off the GPU, and for
  one-element tensors (losses, scores) ``.item()`` keeps plain numbers.

The census says which: the bytes the holder's graphs keep against its own bytes, and the shapes of the
tensors it listed. The larger share comes first; the other is offered second when it frees a mebibyte or
more (``.item()`` always, where it applies: it frees both). Without a census of the holder (a storing line
found by the growth's data flow alone), or for a cause other than retention, nothing is chosen: the advice
text stays. Which of the chosen edits the user's file proves safe is lint's to say (lint/engine/store_fixes.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.analysis.model import Holder, StoringLine
from vramlens.units import format_bytes as fmt

MIB = 1 << 20
# The stores whose stored value can be rewritten; a concatenation's result must stay where the old part is.
_EDITABLE = {"append": ("detach", "detach_cpu", "item"), "extend": ("detach", "detach_cpu", "item"),
             "item": ("detach", "detach_cpu", "item"), "augmented": ("detach", "item"), "concat": ("detach",)}


@dataclass(frozen=True)
class EditChoice:
    method: str  # "detach" | "detach_cpu" | "item"
    why: str  # what it frees, from the census: "keeps the values, frees the 2.48 GiB their autograd graphs hold"


@dataclass(frozen=True)
class StoreEdit:
    """The storing line an edit may rewrite, and the edits worth offering there, surest first."""

    path: str  # as recorded
    line: int  # 1-based
    target: str  # the container as the statement writes it: "self.val_outputs"
    choices: tuple[EditChoice, ...]


def store_edit(cause: str, storing: list[StoringLine], holders: list[Holder]) -> StoreEdit | None:
    """The edits for the first storing line, when the diagnosis is retention and the census saw its holder."""
    if cause != "retained_references" or not storing:
        return None
    line = storing[0]
    allowed = _EDITABLE.get(line.kind)
    holder = next((h for h in holders if h.stored_at == (line.path, line.line) and h.root == line.holder), None)
    if allowed is None or line.found_by != "holder" or holder is None or holder.with_graph is None:
        return None  # no census of what it keeps: which edit fits is not known
    name = line.target if holder.root.startswith("local ") else holder.root  # `features`, not its frame
    choices = [choice for choice in _by_share(holder, name) if choice.method in allowed]
    return StoreEdit(line.path, line.line, line.target, tuple(choices)) if choices else None


def _by_share(holder: Holder, name: str) -> list[EditChoice]:
    graphs, own = holder.graph_bytes, holder.bytes
    detach = EditChoice("detach", f"keeps the values, frees the {fmt(graphs)} their autograd graphs hold in {name}")
    if holder.item_numel == 1:
        kept = EditChoice("item", f"frees the {fmt(own + graphs)} {name} holds on the GPU")
    else:
        kept = EditChoice("detach_cpu", f"frees the {fmt(own + graphs)} {name} holds on the GPU")
    if graphs >= MIB and graphs >= own:
        return [detach] + ([kept] if kept.method == "item" or own >= MIB else [])
    if own >= MIB:
        return [kept] + ([detach] if graphs >= MIB else [])
    return []
