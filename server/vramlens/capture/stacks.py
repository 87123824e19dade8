"""One frames list per distinct stack: where the snapshot enters, every trace entry whose stack equals
one seen before is given that one's list, so the checks and every later stage work once per distinct
stack (keyed on the list's identity) instead of once per entry, and the copies are freed.

torch shares one dict per distinct frame between every stack it is in, but gives each trace entry its
own frames list: a million entries hold a few hundred distinct stacks. A list is matched to a known
one by the identities of a few of its frames, then confirmed by comparing the two lists (in C, each
frame on identity first), so a match is exact. Equal is enough, identical frames are not required:
the entry is given the known list, so nothing past the check ever reads the one that only compared
equal. Stacks whose sampled frames collide too often are matched on every frame's identity. A trace whose frames are not shared (made, not recorded) would make the table as large as
the trace: past ``MAX_KNOWN`` distinct stacks, a new one is kept as it is and not remembered.
"""

from __future__ import annotations

MAX_CANDIDATES = 16  # known stacks compared under one sample before the exact key is used
MAX_KNOWN = 1 << 16  # distinct stacks remembered; real snapshots hold hundreds to a few thousand


class SharedStacks:
    """The distinct frames lists of one trace, in order of first appearance."""

    __slots__ = ("distinct", "_sampled", "_exact", "_known", "_last")

    def __init__(self) -> None:
        self.distinct: list = []  # every list ``share`` kept: what is left to check frame by frame
        self._sampled: dict = {}  # (length, ids of 5 frames) -> [known lists]
        self._exact: dict = {}  # ids of every frame -> known list
        self._known = 0
        self._last = (None, None)  # the last list asked about and its answer (free pairs share a list)

    def share_entries(self, trace: list, stacks: list) -> None:
        """Each entry of ``trace`` given the known list of its stack (``stacks``: the entries' frames,
        in order). The same as ``share`` per entry, with its common case inlined: the stack is the
        first one known under its sample (a call per entry cost a third of the shape check)."""
        sampled, share = self._sampled, self.share
        last_in = last_out = None
        for entry, frames in zip(trace, stacks):
            if not frames:
                continue
            if frames is last_in:
                shared = last_out
            else:
                size = len(frames)
                candidates = sampled.get((size, id(frames[0]), id(frames[size > 1]), id(frames[size >> 3]),
                                          id(frames[size >> 2]), id(frames[size >> 1])))
                known = candidates[0] if candidates else None
                try:
                    hit = known is frames or known is not None and known == frames
                except RecursionError:  # a frame holding a value nested deeper than the interpreter compares
                    hit = False
                shared = known if hit else share(frames)
                last_in, last_out = frames, shared
            if shared is not frames:
                entry["frames"] = shared

    def share(self, frames: list) -> list:
        """The known list with the same frames as ``frames`` (a non-empty list), or ``frames`` itself,
        now known."""
        last_in, last_out = self._last
        if frames is last_in:
            return last_out
        size = len(frames)
        # torch lists the innermost frame first: the first frames tell operators apart, the others
        # call sites (with --stacks all the innermost are the allocator's own, the same in every stack).
        # ``frames[size > 1]``: the second frame, or the first of a one-frame stack.
        key = (size, id(frames[0]), id(frames[size > 1]), id(frames[size >> 3]), id(frames[size >> 2]), id(frames[size >> 1]))
        candidates = self._sampled.get(key)
        if candidates is None:
            shared = self._add(frames)
            if shared is frames and self._known <= MAX_KNOWN:
                self._sampled[key] = [frames]
        else:
            for known in candidates:
                if known is frames or _equal(known, frames):
                    shared = known
                    break
            else:
                if len(candidates) >= MAX_CANDIDATES:
                    shared = self._exact_match(frames)
                else:
                    shared = self._add(frames)
                    if self._known <= MAX_KNOWN:
                        candidates.append(frames)
        self._last = (frames, shared)
        return shared

    def _add(self, frames: list) -> list:
        self.distinct.append(frames)
        self._known += 1
        return frames

    def _exact_match(self, frames: list) -> list:
        key = tuple(map(id, frames))
        known = self._exact.get(key)
        if known is not None:
            return known
        self._add(frames)
        if self._known <= MAX_KNOWN:
            self._exact[key] = frames
        return frames


def _equal(known: list, frames: list) -> bool:
    try:
        return known == frames
    except RecursionError:  # a frame holding a value nested deeper than the interpreter compares
        return False
