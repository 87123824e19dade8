"""Whether a growing cache is growing as designed (the working set) or keeping what it should let go.

A KV cache grows with the tokens of one generation and is sized by it: its growth is the working set
of that generation. Code named as a cache that keeps growing across training steps (each one a
backward pass and an optimizer step) is not that: nothing a step computed needs the earlier steps'
tensors, so a cache that never evicts them (a dataset memoising its samples on the GPU) is memory
kept across steps, which the user must bound or move.
"""

from __future__ import annotations

from vramlens.analysis.diagnosis.mode import TRAINING
from vramlens.units import format_bytes as fmt
from vramlens.units import count_of


def cache_as_designed(growth, mode: str | None) -> bool:
    """``growth``: attribution's Growth (or None); ``mode``: "training" | "inference" | None."""
    return growth is not None and growth.intended_cache and mode != TRAINING


def training_cache_sentence(growth, mode: str | None) -> str | None:
    """Why cache code's growth is not a cache growing as designed, when that is the reason."""
    if growth is None or not growth.intended_cache or mode != TRAINING:
        return None
    return (f"{fmt(growth.cache)} of the growth was made or held by code named as a cache, but it grew across "
            f"{count_of(growth.intervals, 'training step')} (each with a backward pass and an optimizer step): a KV "
            "cache lives for one generation, while this one keeps every step's tensors and never lets them go.")
