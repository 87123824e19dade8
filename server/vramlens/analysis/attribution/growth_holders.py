"""Holders ranked by what grew, not by what is largest at the moment.

At an OOM inside a step, the step's own tensors (the attention scores of the forward in progress,
a batch in a local) can outweigh the container that grew by a gigabyte per step; advice aimed at
the largest holder then aims at the wrong object. The step model knows which bytes were allocated
in earlier steps and are still live (survivors), by the line that allocated them; each holder is
charged the survivors of the line that filled it (largest holder first, never more than it keeps,
never the same bytes twice). Holders are then ordered by those survivors, and a holder without any
beside one that grew is the step's working set.
"""

from __future__ import annotations

from vramlens.analysis.model import Holder, StepModel

MIB = 1 << 20


def rank_by_growth(holders: list[Holder], steps: StepModel | None) -> None:
    """Set each holder's ``survivor_bytes`` and ``working_set`` and sort the list in place."""
    if steps is None or not steps.survivors_by_line:
        return
    left = dict(steps.survivors_by_line)
    for holder in sorted(holders, key=lambda h: -(h.bytes + h.graph_bytes)):
        key = holder.appended_at
        take = min(holder.bytes + holder.graph_bytes, left.get(key, 0)) if key else 0
        holder.survivor_bytes = take
        if take:
            left[key] -= take
    grown = any((holder.survivor_bytes or 0) >= MIB for holder in holders)
    for holder in holders:
        holder.working_set = grown and holder.kind != "cache" and not holder.survivor_bytes
    holders.sort(key=lambda h: (-(h.survivor_bytes or 0), -(h.bytes + h.graph_bytes)))
