"""Stage 3, steps: the run seen as iterations of the loop that drives the work, found in the
allocations' call paths alone (so raw `_dump_snapshot` pickles get it too), then what survives
from one step into the next and how fast the floor between steps rises."""

from vramlens.analysis.steps.stage import Steps, model
from vramlens.analysis.steps.step_model import build_step_model

__all__ = ["Steps", "build_step_model", "model"]
