"""What the memory is (the census's roles) and who holds it (its holders), as rows people read: the CLI's
--verbose sections, the Markdown report's and the report view's tables draw these rows. A holder's places
come from ``place(path, line)``, so each renderer adds its own markup there (Markdown's code spans)."""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.analysis.attribution.roles import census_moment_words
from vramlens.analysis.model import Analysis, Holder
from vramlens.analysis.rendering.line_view import holder_history
from vramlens.units import count_of
from vramlens.units import format_bytes as fmt

SHOWN_HOLDERS = 5


@dataclass(frozen=True)
class RoleRow:
    label: str  # "activations saved for backward"
    bytes: str  # "2.83 GiB"
    share: str  # "91%"


@dataclass(frozen=True)
class HolderRow:
    root: str  # "model.val_outputs"
    what: str  # "a list of 23"
    bytes: str  # "2.82 GiB"
    tensors: str  # "23 tensors"
    graphs: str | None  # "23 carry an autograd graph"
    history: tuple[str, ...]  # "grew 2.50 GiB across steps", "stored at train.py:38", "allocated at train.py:37"
    filled_at: str | None  # where what it keeps was allocated (or it was made): "train.py:37"


def role_rows(analysis: Analysis) -> list[RoleRow]:
    total = sum(role.bytes for role in analysis.roles) or 1
    return [RoleRow(role.label, fmt(role.bytes), f"{role.bytes / total:.0%}") for role in analysis.roles]


def roles_total(analysis: Analysis) -> str:
    return fmt(sum(role.bytes for role in analysis.roles))


def census_words(analysis: Analysis) -> str:
    """"from the census taken in the process at the OOM": when what the roles and holders say was true."""
    return f"from the census taken in the process {census_moment_words(analysis.census_moment, analysis.oom is not None)}"


def holders_ranked(analysis: Analysis) -> bool:
    """Holders are ranked by what grew across steps when any grew (the step's own tensors are its working set)."""
    return any(holder.survivor_bytes for holder in analysis.holders)


def holder_row(holder: Holder, place) -> HolderRow:
    filled = holder.appended_at or holder.created_at
    return HolderRow(
        root=holder.root, what=holder.container_words, bytes=fmt(holder.bytes),
        tensors=count_of(holder.tensors, "tensor"),
        graphs=f"{holder.with_graph} carry an autograd graph" if holder.with_graph else None,
        history=tuple(holder_history(holder, place)), filled_at=place(*filled) if filled else None)


def holder_rows(analysis: Analysis, place, limit: int | None = SHOWN_HOLDERS) -> list[HolderRow]:
    holders = analysis.holders if limit is None else analysis.holders[:limit]
    return [holder_row(holder, place) for holder in holders]
