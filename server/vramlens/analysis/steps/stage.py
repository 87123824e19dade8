"""The steps stage: the run seen as iterations, and what its call paths show about the work
(a backward pass, an optimizer)."""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.analysis.load.stage import Loaded
from vramlens.analysis.model import StepModel
from vramlens.analysis.replay.stage import Replayed
from vramlens.analysis.steps.step_model import TraceFacts, build_step_model


@dataclass(frozen=True)
class Steps:
    """The step model's stage result: the training steps the trace shows, and the trace's facts."""

    model: StepModel | None  # None when the trace shows no recurring loop
    facts: TraceFacts | None  # None when the trace allocated nothing


def model(loaded: Loaded, replayed: Replayed) -> Steps:
    found, facts = build_step_model(replayed.replay, loaded.trace, replayed.start_allocated, replayed.moment,
                                    replayed.outcome, replayed.live_at_moment)
    return Steps(found, facts)
