"""Training or inference, from evidence only: a backward pass or an optimizer step in the trace,
grad mode recorded at the moment, and whole iterations seen without either.

The answer gates advice: running code under ``torch.no_grad()`` / ``inference_mode()`` is only
ever suggested when the evidence says inference, never for a step that may still reach its
backward (the first forward of a training step looks just like inference).
"""

from __future__ import annotations

from vramlens.analysis.model import StepModel

TRAINING, INFERENCE = "training", "inference"


def run_mode(backward_seen: bool, optimizer_seen: bool, steps: StepModel | None,
             grad_enabled: bool | None = None, inference_mode: bool | None = None) -> str | None:
    """``grad_enabled`` / ``inference_mode``: as the census recorded them at the moment (None: not recorded)."""
    if backward_seen or optimizer_seen:
        return TRAINING
    if inference_mode or grad_enabled is False:
        return INFERENCE
    if steps is not None and steps.completed >= 2 and all(step.kind != "train" for step in steps.steps):
        return INFERENCE  # whole iterations ran, none of them with a backward pass or an optimizer
    return None


def main_thread_in_backward(census) -> bool:
    """Whether the census found the main thread inside ``backward()`` at the moment (the autograd
    engine's own thread made the failing allocation, with no Python frame of its own)."""
    for frame in getattr(census, "main_stack", None) or ():
        filename = str(frame.get("filename") or "").replace("\\", "/")
        if "/torch/autograd/" in filename and frame.get("name") in ("backward", "_engine_run_backward", "grad"):
            return True
        if "/torch/_tensor.py" in filename.replace("\\", "/") and frame.get("name") == "backward":
            return True
    return False
