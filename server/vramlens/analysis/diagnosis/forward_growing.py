"""A split cache met inside a first pass at the very limit: the working set, not the layout.

Fragmentation is the cause when the step would have gone on had its memory been packed. That needs
evidence that one step fits the limit at all, and a first step that never completed gives none. Two
kinds of evidence say the rest of the pass needs more than packing could give back, and the
allocator's layout then only decided which request failed first:

- while a forward pass runs with grad on, what it saves for the backward only accumulates until the
  backward begins; when most of the live memory is those saved activations, the pass is still growing;
- with or without grad, when packing would leave less room than one more request of the failing size,
  the next layer's request of that size (a pass repeats its allocations layer after layer; an
  intermediate is made while its input still lives) cannot be served even packed.
"""

from __future__ import annotations

from vramlens.analysis.diagnosis.mode import main_thread_in_backward
from vramlens.units import format_bytes as fmt

ACTIVATIONS_ROLE = "activations"
SAVED_SHARE = 0.5  # of the live memory: saved activations are what fills it


def saved_activations(census) -> int:
    """Bytes the census puts in the role of activations saved for backward (and temporaries)."""
    return sum(share.bytes for share in (census.roles if census is not None else ()) if share.role == ACTIVATIONS_ROLE)


def forward_still_growing(allocated: int, facts) -> list[str] | None:
    """The evidence that the live set was a first forward pass still building its graph, or None.
    ``facts``: the classification's RunFacts (steps, grad mode and census at the moment)."""
    steps, census = facts.steps, facts.census
    if steps is not None and steps.completed:
        return None  # a completed step showed what one step needs
    if facts.grad_enabled is not True or census is None or main_thread_in_backward(census):
        return None  # no graph being saved, or the backward had begun freeing it
    saved = saved_activations(census)
    if allocated <= 0 or saved < SAVED_SHARE * allocated:
        return None
    return [f"No step had completed, and {fmt(saved)} of the {fmt(allocated)} live ({saved / allocated:.0%}) was "
            "activations saved for the backward by a forward pass still under way with grad on: that memory only "
            "grows until the backward begins, so nothing shows that one step fits the limit even packed."]


def first_pass_without_room(allocated: int, request: int | None, limit: int | None, facts) -> list[str] | None:
    """No step completed, and packing would leave less than one more request of the failing size: nothing shows
    that one pass fits the limit even packed."""
    steps = facts.steps
    if steps is not None and steps.completed:
        return None
    if not request or not limit or allocated + request > limit:
        return None  # over the limit even packed: the working set's own evidence says so
    room = packed_room_sentence(limit, allocated + request, request)
    if room is None:
        return None
    return [f"No step had completed: nothing shows that one pass fits the limit. {room}"]


def packed_room_sentence(limit: int, need: int, request: int) -> str | None:
    """When packing would leave less than one more request of the same size, say so."""
    room = max(limit - need, 0)
    if room >= request:
        return None
    return (f"Packed, only {fmt(room)} would have been left after this request: not room for one more of its size, "
            "and a forward pass repeats its allocations layer after layer.")
