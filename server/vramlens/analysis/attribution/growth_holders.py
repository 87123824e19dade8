"""Holders ranked by what grew, not by what is largest at the moment.

At an OOM inside a step, the step's own tensors (the attention scores of the forward in progress,
a batch in a local) can outweigh the container that grew by a gigabyte per step; advice aimed at
the largest holder then aims at the wrong object. The step model knows which bytes were allocated
in earlier steps and are still live (survivors), by the line that allocated them; each holder is
charged the survivors of the lines that made what it keeps (largest holder first, never more than
it keeps of a line, never the same bytes twice). What a holder keeps is its own tensors and, when
the census walked the autograd graphs, what its graphs saved: a running sum of losses keeps every
batch's activations, allocated by the model's forward rather than by the line that adds to the sum,
so the sum is charged the forward's survivors before the forward's own locals of the step in
progress are. Holders are then ordered by those survivors, and a holder without any beside one
that grew is the step's working set.
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
        taken = 0
        for key, size in kept_by_line(holder).items():
            take = min(size, left.get(key, 0))
            if take:
                left[key] -= take
                taken += take
        holder.survivor_bytes = taken
    grown = any((holder.survivor_bytes or 0) >= MIB for holder in holders)
    for holder in holders:
        holder.working_set = grown and holder.kind != "cache" and not holder.survivor_bytes
    holders.sort(key=lambda h: (-(h.survivor_bytes or 0), -(h.bytes + h.graph_bytes)))


def kept_by_line(holder: Holder) -> dict:
    """Line key -> bytes the holder keeps that the line made; without the census' blocks (a holder built
    by hand, a census of another moment), all it keeps is charged to the line that filled it."""
    if holder.kept_lines:
        return holder.kept_lines
    return {holder.appended_at: holder.bytes + holder.graph_bytes} if holder.appended_at else {}
