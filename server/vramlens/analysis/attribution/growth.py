"""Growth across steps, judged from the step model: is the floor between steps rising, by how
much per step, what carries it (kept outputs, or a cache growing as designed), and how soon the
live set passes the limit even perfectly packed.

Repetition inside one step (the layers of a forward pass, a model built in a loop, a checkpoint
loaded tensor by tensor, the optimizer's state made at its first step) never counts: only the
floor at step boundaries from the second step on does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from vramlens.analysis.attribution.roles import ROLE_NAMES
from vramlens.analysis.model import NO_FRAME_FUNCTION, StepModel

KV_CACHE_ROLE = ROLE_NAMES["cache"][0]

MIB = 1024 * 1024
MIN_RISE = 32 * MIB  # a floor rising by less than this over the run is noise for an OOM's story
MIN_RISE_SHARE = 0.05  # ...or by less than this share of the live bytes at the moment
RISING_SHARE = 0.6  # of the step-to-step changes of the floor that must be rises
SOON_STEPS = 10  # growth that passes the limit within this many steps (or 2× the steps done) is the cause


@dataclass
class Growth:
    """How the memory left behind after each step grows, and the lines that carry it."""

    rate: int  # bytes per step, least squares over the floors from the second step on
    intervals: int  # step-to-step changes measured
    rise: int  # floor rise from the second step to the moment's step
    floor: int  # the floor at the moment's step
    excess: int  # the largest rise above the floor inside a completed step (the step's own working set)
    carriers: list[tuple[tuple, int]] = field(default_factory=list)  # (line key, bytes) holding the growth
    sites: list[tuple[tuple, int]] = field(default_factory=list)  # ((file, line, function), bytes): who allocated them
    old: int = 0  # bytes older than the previous step still live: accumulation
    cache: int = 0  # bytes allocated by cache code
    steps_done: int = 0
    at_peak: bool = False  # the carriers are the lines holding most at the peak (the run let go of them after)

    @property
    def intended_cache(self) -> bool:
        """A cache growing as designed (a KV cache): most of what carries the growth was made by cache code."""
        carried = sum(size for _key, size in self.carriers)
        return carried > 0 and self.cache >= 0.5 * carried

    def steps_left(self, limit: int | None) -> int | None:
        """Steps until the floor plus one step's own working set passes ``limit``, perfectly packed."""
        if limit is None or self.rate <= 0:
            return None
        room = limit - self.floor - self.excess
        return max(int(room // self.rate), 0)

    def soon(self, limit: int | None) -> bool:
        left = self.steps_left(limit)
        return left is not None and left <= max(SOON_STEPS, 2 * self.steps_done)


def growth_of(steps: StepModel | None, live_now: int, roles_of: dict | None = None) -> Growth | None:
    """The growth the step model shows, or None when the floor is flat, too few steps ran, or the
    rise is too small to matter at this moment. ``roles_of`` (block address -> the census' role)
    tells a cache that the program wrote itself: its code need not be named as one, the object that
    holds the growing tensors is (a class named ``...Cache``, a library's cache)."""
    if steps is None or steps.growth_per_step is None or steps.growth_per_step <= 0:
        return None
    floors = [step.floor_allocated for step in steps.steps[1:]]
    current = _current_index(steps)
    floors = floors[:current]  # up to the moment's step, which starts at its floor
    if len(floors) < 2:
        return None
    changes = [b - a for a, b in zip(floors, floors[1:])]
    rising = sum(1 for change in changes if change > 0)
    rise = floors[-1] - floors[0]
    if rise < max(MIN_RISE, MIN_RISE_SHARE * live_now) or rising < RISING_SHARE * len(changes):
        return None
    carried = sum(steps.survivors_by_line.values())
    if steps.setup_survivors > carried:
        return None  # the floor rose with a model built (or a checkpoint loaded) step by step: setup, not growth
    completed = [step for step in steps.steps if step.complete]
    excess = max((step.peak_allocated - step.floor_allocated for step in completed[1:] or completed), default=0)
    carriers = sorted(steps.survivors_by_line.items(), key=lambda item: -item[1])
    return Growth(rate=steps.growth_per_step, intervals=len(changes), rise=rise, floor=floors[-1], excess=max(excess, 0),
                  carriers=carriers, sites=sorted(steps.survivor_sites.items(), key=lambda item: -item[1]),
                  old=steps.old_survivors, cache=max(steps.cache_survivors, _held_by_caches(steps, roles_of)),
                  steps_done=steps.completed)


def _held_by_caches(steps: StepModel, roles_of: dict | None) -> int:
    """Bytes of the growth that the census found inside cache objects at the moment."""
    if not roles_of:
        return 0
    return sum(size for address, size in steps.survivor_blocks.items() if roles_of.get(address) == KV_CACHE_ROLE)


def _current_index(steps: StepModel) -> int:
    """How many floors (from the second step on) lead up to the moment: all for a completed run."""
    incomplete = [i for i, step in enumerate(steps.steps) if not step.complete]
    return incomplete[0] if incomplete else len(steps.steps)


def carriers_at_peak(growth: Growth | None, lines: list, moment: str) -> Growth | None:
    """A completed run that let go of what it kept (a function returned, its list with it) has no
    survivors at its end; what carried the growth is then the user line that held most at the peak,
    when it held at least half of the floor's rise (``lines`` are of the peak, largest first).
    Returns the growth with those carriers (the same growth when it has its own)."""
    if growth is None or growth.carriers or moment != "peak":
        return growth
    if growth.rise < 0.5 * sum(line.live_bytes for line in lines):
        return growth  # the growth is not what filled the peak: no line is named for it
    top = next((line for line in lines if line.path is not None), None)
    if top is not None and top.live_bytes >= 0.5 * growth.rise:
        return dataclasses.replace(growth, carriers=[((top.path, top.line), min(top.live_bytes, growth.rise))], at_peak=True)
    return growth


def frameless_at_peak(growth: Growth | None, lines: list, moment: str) -> int:
    """The bytes that carried the growth of a completed run that let go of it, when the line holding most at
    the peak is the one with no Python frame (the autograd engine's thread: a backward's gradients kept step
    after step) and holds at least half of the floor's rise; else 0. The storing line is then followed from the
    backward call; the growth's own carriers stay as they are, as no user line made them."""
    if growth is None or growth.carriers or moment != "peak" or not lines:
        return 0
    top = lines[0]  # largest live first
    if top.path is not None or top.function != NO_FRAME_FUNCTION or growth.rise < 0.5 * sum(l.live_bytes for l in lines):
        return 0
    return min(top.live_bytes, growth.rise) if top.live_bytes >= 0.5 * growth.rise else 0
