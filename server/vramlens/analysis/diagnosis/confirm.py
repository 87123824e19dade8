"""The experiment that separates the two most likely causes, and what its result means.

- fragmentation vs working set: the same run with ``expandable_segments:True``. If the OOM goes
  away, the free memory was there but split; if it stays, the live set itself did not fit.
- growth across steps (kept outputs, a KV cache) vs the working set of one step: the same run
  with fewer steps (or tokens) when the script takes them as an argument, else under a smaller
  memory limit. Growth fits with fewer steps, and under a smaller limit fails after fewer
  completed steps; the working set of one step fails in the same step whatever the limit.
- working set alone: a smaller batch, when the script takes one as an argument (the live set of
  a step scales with it); otherwise the allocator experiment, which rules fragmentation out.

Pure: ``plan_for`` builds the plan from the diagnosis and the run's command line; ``judge``
reads the measured runs (experiments/confirm.py runs them).
"""

from __future__ import annotations

import shlex

from vramlens.analysis.model import ConfirmPlan, Diagnosis
from vramlens.analysis.load.rerun import memory_limit_options, recorded_argv, torchrun_options
from vramlens.units import format_bytes
from vramlens.units import count_of

STEP_FLAGS = ("--steps", "--max-steps", "--max_steps", "--num-steps", "--num_steps", "--iters", "--iterations",
              "--max-iters", "--max_iters", "--train-steps", "--train_steps", "--epochs", "--num-epochs", "--num_epochs",
              "--max-epochs", "--max_epochs", "--num-batches", "--num_batches", "--batches", "--eval-steps",
              "--eval_steps", "--eval-batches", "--eval_batches", "--requests", "--rounds")
TOKEN_FLAGS = ("--max-new-tokens", "--max_new_tokens", "--new-tokens", "--new_tokens", "--gen-len", "--gen_len",
               "--generate-tokens", "--num-tokens", "--num_tokens", "--decode-steps")
BATCH_FLAGS = ("--batch-size", "--batch_size", "--bs", "--batch", "--per-device-batch-size",
               "--per_device_train_batch_size", "--per_device_eval_batch_size", "--micro-batch-size",
               "--micro_batch_size", "--train-batch-size", "--eval-batch-size")
EXPANDABLE = "expandable_segments:True"
SMALLER_LIMIT = 0.75  # of the limit the run failed under

GROWTH = "growth"  # the plan separates growth across steps from one step's working set
ALLOCATOR = "allocator"  # ... fragmentation from the working set
BATCH = "batch"  # ... confirms the working set by shrinking it


def _flag_value(argv: list[str], flags: tuple[str, ...]) -> tuple[str, int] | None:
    """(flag, integer value) of the first of ``flags`` on the command line, e.g. ("--steps", 40)."""
    args = list(argv or [])[1:]
    for position, arg in enumerate(args):
        flag, has_value, inline = arg.partition("=")
        if flag not in flags:
            continue
        value = inline if has_value else (args[position + 1] if position + 1 < len(args) else "")
        try:
            number = int(value)
        except ValueError:
            continue
        if number >= 2:
            return flag, number
    return None


def _command(meta: dict, variant: dict | None = None) -> str:
    """``vramlens run --confirm …`` as recorded; for a torchrun rank (where --confirm does not drive torchrun)
    the launch again with ``--torchrun`` and its options, the variant applied, to compare with this capture."""
    torchrun = torchrun_options(meta)
    if torchrun is None or variant is None:
        return shlex.join(["vramlens", "run", "--confirm", *memory_limit_options(meta), *recorded_argv(meta)])
    argv, limit, env = recorded_argv(meta), memory_limit_options(meta), ""
    if variant["kind"] == "argument":
        argv = _with_argument(argv, variant["flag"], variant["value"])
    elif variant["kind"] == "memory_limit":
        limit = ["--memory-limit", variant["value"]]
    elif variant["kind"] == "allocator":
        env = f"PYTORCH_CUDA_ALLOC_CONF={shlex.quote(variant['setting'])} "
    return env + shlex.join(["vramlens", "run", *limit, "--torchrun", *torchrun, *argv])


def _with_argument(argv: list[str], flag: str, value: str) -> list[str]:
    out = list(argv)
    for position, arg in enumerate(out):
        if arg == flag and position + 1 < len(out):
            out[position + 1] = value
            return out
        if arg.startswith(flag + "="):
            out[position] = f"{flag}={value}"
            return out
    return out + [flag, value]


def _growth_plan(meta: dict, limit: int | None, what: str) -> ConfirmPlan | None:
    argv = meta.get("argv") or []
    found = _flag_value(argv, TOKEN_FLAGS if what == "tokens" else STEP_FLAGS) or _flag_value(argv, STEP_FLAGS)
    if found is not None:
        flag, value = found
        variant = {"kind": "argument", "flag": flag, "value": str(max(value // 2, 1))}
        expectation = (f"If the run fits with {flag} {value // 2}, the memory grows with the steps (confirmed); if it still "
                       "runs out in the same step, the working set of one step is too large.")
    elif limit:
        smaller = int(limit * SMALLER_LIMIT)
        variant = {"kind": "memory_limit", "value": f"{smaller / 2**30:.2f}GiB"}
        expectation = (f"Under {format_bytes(smaller)} a growth fails after fewer completed steps (confirmed); the working "
                       "set of one step fails in the same step as before.")
    else:
        return None
    return ConfirmPlan(question="growth across steps or the working set of one step?", variants=[variant],
                       command=_command(meta, variant), expectation=expectation)


def _allocator_plan(meta: dict) -> ConfirmPlan:
    return ConfirmPlan(
        question="fragmentation or the working set?",
        variants=[{"kind": "allocator", "setting": EXPANDABLE}],
        command=_command(meta, {"kind": "allocator", "setting": EXPANDABLE}),
        expectation=("If the OOM goes away with expandable segments, free memory was there but split (fragmentation); "
                     "if it stays, the live tensors themselves did not fit (working set)."),
    )


def _batch_plan(meta: dict) -> ConfirmPlan | None:
    found = _flag_value(meta.get("argv") or [], BATCH_FLAGS)
    if found is None:
        return None
    flag, value = found
    variant = {"kind": "argument", "flag": flag, "value": str(value // 2)}
    return ConfirmPlan(
        question="is it the working set of one step?",
        variants=[variant],
        command=_command(meta, variant),
        expectation=(f"If the run fits with {flag} {value // 2}, the live set of one step was too large (confirmed); if it "
                     "still runs out, something else holds the memory."),
    )


def plan_for(diagnosis: Diagnosis, meta: dict, limit: int | None, intended_cache: bool = False) -> ConfirmPlan | None:
    """The experiment that decides between the diagnosis' cause and its most likely alternative."""
    plan = _plan(diagnosis, meta, limit, intended_cache)
    if plan is not None and torchrun_options(meta) is not None:
        plan.expectation = ("Launch it and compare its capture with this one (`vramlens diff THIS NEW`): " +
                            plan.expectation[:1].lower() + plan.expectation[1:])
    return plan


def _plan(diagnosis: Diagnosis, meta: dict, limit: int | None, intended_cache: bool) -> ConfirmPlan | None:
    cause, alternative = diagnosis.cause, diagnosis.alternative
    if cause == "outside_allocator" or cause in ("no_problem", "cached_not_leak"):
        return None
    if cause == "fragmentation" or alternative == "fragmentation":
        return _allocator_plan(meta)
    if cause == "retained_references" or alternative == "retained_references" or intended_cache:
        return _growth_plan(meta, limit, "tokens" if intended_cache else "steps") or _allocator_plan(meta)
    if cause == "working_set":
        return _batch_plan(meta) or _allocator_plan(meta)
    return None


def plan_kind(plan: ConfirmPlan) -> str:
    kinds = {variant["kind"] for variant in plan.variants}
    if kinds == {"allocator"}:
        return ALLOCATOR
    if plan.question.startswith("growth"):
        return GROWTH
    return BATCH


def judge(diagnosis_cause: str, alternative: str | None, kind: str, baseline: dict, variant: dict) -> dict:
    """What the measurement says. ``baseline`` / ``variant``: {"oom": bool, "completed_steps": int|None}
    for the runs of each (OOM only when every run of it ran out). Returns {"cause", "verdict"
    ("confirmed" | "revised" | "inconclusive"), "sentence"}."""
    if not baseline.get("oom"):
        return {"cause": diagnosis_cause, "verdict": "inconclusive",
                "sentence": "The baseline did not run out of memory this time, so the experiment cannot tell the causes apart."}
    if kind == ALLOCATOR:
        if not variant.get("oom"):
            cause, why = "fragmentation", f"with {EXPANDABLE} the same run fitted: the free memory was there, but split"
        else:
            cause = alternative if diagnosis_cause == "fragmentation" and alternative else (
                diagnosis_cause if diagnosis_cause != "fragmentation" else "working_set")
            why = f"with {EXPANDABLE} the OOM stayed: the allocator's layout was not what ran out"
    elif kind == GROWTH:
        before, after = baseline.get("completed_steps"), variant.get("completed_steps")
        if not variant.get("oom"):
            cause, why = _growth_cause(diagnosis_cause, alternative), "with fewer steps the run fitted: the memory grows with the steps"
        elif before is not None and after is not None and after < before:
            cause = _growth_cause(diagnosis_cause, alternative)
            why = f"under the smaller limit it failed after {count_of(after, 'completed step')} instead of {before}: the memory grows with the steps"
        elif before is not None and after is not None:
            cause, why = "working_set", f"it failed in the same step as before ({after} completed): one step's working set is too large"
        else:
            return {"cause": diagnosis_cause, "verdict": "inconclusive",
                    "sentence": "The runs did not show their steps, so the experiment cannot tell the causes apart."}
    else:
        if not variant.get("oom"):
            cause, why = "working_set", "with half the batch the run fitted: one step's live set was too large"
        else:
            return {"cause": diagnosis_cause, "verdict": "inconclusive",
                    "sentence": "With half the batch it still ran out of memory: the batch is not what fills the memory."}
    verdict = "confirmed" if cause == diagnosis_cause else "revised"
    word = "Confirmed by measurement" if verdict == "confirmed" else f"Revised by measurement to {cause}"
    return {"cause": cause, "verdict": verdict, "sentence": f"{word}: {why}."}


def _growth_cause(cause: str, alternative: str | None) -> str:
    """The growth's own cause: the diagnosis' when it named growth (retained, or a KV cache as
    working set), else the alternative it proposed."""
    if cause == "retained_references" or alternative != "retained_references":
        return cause
    return "retained_references"
