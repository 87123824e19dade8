"""Memory kept across the iterations of an outer loop that the recorded steps cannot show.

The step model sees the loop the trace repeats; when that loop runs inside one call of the user's
line (the decoding steps of one ``model.generate(...)``), the floor between its steps says nothing
about the loop around that call, and a trace that began late may not even hold the earlier calls.
The census still does: a container in the user's frame that holds most of the live memory, made at a
line whose call is still running at the OOM (its result cannot be in the container yet), holds the
results of that line's earlier calls. Kept across the outer loop, they are retained references.
"""

from __future__ import annotations

from vramlens.analysis.load.sources import place_of, short_path
from vramlens.analysis.model import Diagnosis
from vramlens.units import format_bytes as fmt
from vramlens.units import count_of

KEPT_SHARE = 0.5  # of the live memory, held by the container
SOON_ITEMS = 10  # packed, the room left holds at most this many more of its items: the keeping is the cause
SIZED = ("list", "dict", "tuple", "deque", "frame", "locals", "attribute")


def _frame_key(frame: dict) -> tuple[str, int]:
    return str(frame.get("filename") or "").replace("\\", "/"), int(frame.get("line") or 0)


def _short(driver: str) -> str:
    """The step loop's frame (``"path:line function"``) with its file as a reader recognises it:
    ``transformers/generation/utils.py:3032 _sample``."""
    location, _, function = driver.rpartition(" ")
    path, _, line = location.rpartition(":")
    return f"{short_path(path)}:{line} {function}" if path else driver


def _driver_depth(driver: str | None, stack: list[dict]) -> int | None:
    """Where the step model's loop (``"path:line function"``) is on the main thread's stack."""
    if not driver or " " not in driver:
        return None
    location, function = driver.rsplit(" ", 1)
    path = location.rsplit(":", 1)[0].replace("\\", "/")
    return next((depth for depth, frame in enumerate(stack)
                 if _frame_key(frame)[0] == path and frame.get("name") == function), None)


def kept_holder(allocated: int, facts):
    """(holder, depth of its line on the stack) for a container keeping earlier calls' results, or None."""
    census, steps = facts.census, facts.steps
    stack = list(getattr(census, "main_stack", None) or ())
    if census is None or steps is None or not stack:
        return None
    driver_depth = _driver_depth(steps.driver, stack)
    if driver_depth is None:
        return None
    running = {_frame_key(frame): depth for depth, frame in enumerate(stack[:driver_depth])}
    for holder in census.holders:
        if holder.kind not in SIZED or holder.working_set or holder.copy_of or not holder.appended_at:
            continue
        if (holder.length or 0) < 2 or holder.bytes < KEPT_SHARE * max(allocated, 1):
            continue
        path, line = holder.appended_at
        depth = running.get((str(path).replace("\\", "/"), line))
        if depth is not None:
            return holder, depth
    return None


def kept_across_calls(allocated: int, request: int | None, limit: int | None, facts,
                      split_block: int | None = None) -> Diagnosis | None:
    """Retained references when a container keeps earlier calls' results (see the module's docstring).
    ``split_block``: the largest free block when the failing request also met a split cache; the
    keeping must then fill the limit soon."""
    split_cache = split_block is not None
    found = kept_holder(allocated, facts)
    if found is None:
        return None
    holder, _depth = found
    per_item = holder.bytes // holder.length
    room = None if limit is None else max(limit - allocated - (request or 0), 0)
    more = None if room is None or per_item <= 0 else int(room // per_item)
    if split_cache and (more is None or more > SOON_ITEMS):
        return None  # the keeping is too slow to explain this OOM: the split cache did
    path, line = holder.appended_at
    where = place_of(str(path), line, facts.cells)
    steps = facts.steps
    evidence = [
        f"{holder.root}, {holder.container_words} with {holder.length} entries ({count_of(holder.tensors, 'tensor')}, "
        f"{fmt(holder.bytes)}), held "
        f"{holder.bytes / max(allocated, 1):.0%} of the live memory; what it keeps was made at {where}, a line whose "
        "call was still running at the OOM, so it holds the results of that line's earlier calls, kept across the "
        "loop around it.",
        f"The recorded steps are the iterations of {_short(steps.driver)}, inside that call: the floor between them cannot show "
        "memory kept across the calls.",
    ]
    if more is not None and limit is not None:
        evidence.append(f"About {fmt(per_item)} per entry: even perfectly packed, the {fmt(room)} left under the "
                        f"{fmt(limit)} limit holds {count_of(more, 'more entry', 'more entries')}.")
    if split_cache:
        evidence.append(f"The failing request also met a split cache (largest free block {fmt(split_block)}), but that "
                        "only decided which request failed: an allocator setting would not stop the keeping.")
    return Diagnosis("retained_references", 0.7, evidence, alternative="working_set")
