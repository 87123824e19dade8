"""The measured cause of one recorded workload, by the rule written in workloads/README.md.

Inputs, all measured on the machine that recorded the workload:
  - the recorded capture's capture.json (how it ended, the OOM, the end state),
  - the script's output of that run (how many steps completed before the OOM),
  - the confirming runs (experiment.json: the same run with expandable_segments:True, with the
    batch or size halved, with the steps halved, with the fix), one fresh process each.
The workload's declared knobs only say which confirming run is which, and what kind of change
its fix is. The rule never looks at the workload's intent; the result says whether they agree.

    python workloads/ground_truth.py FIXTURE_DIR            # print the cause recomputed from the files
    python workloads/ground_truth.py FIXTURE_DIR --check    # exit 1 if ground_truth.json says otherwise
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

GIB = 2**30
CACHE_GAP = GIB  # completed: at least this much reserved beyond allocated at the end ...
CACHE_RATIO = 2.0  # ... and reserved at least this many times allocated
OUTSIDE_SHARE = 0.25  # OOM without a cap, with at least this share of the device outside PyTorch
GROWTH_MIN_STEPS = 2  # growth needs the OOM to come after at least this many completed steps
GROWTH_SHARE = 0.25  # completed: halving the steps lowered the peak allocated by at least this share ...
GROWTH_MIN_BYTES = 256 * 2**20  # ... and by at least this many bytes
RULES_VERSION = 2  # 2: a completed run whose memory grows with its steps is judged as growth (G1-G3) before C1/C2
EXPANDABLE = "expandable_segments:True"
INTENDED_CACHES = ("library_cache", "own_cache")  # growth_holder values: a cache that grows by design


def inputs_of(workload) -> dict:
    """What the rule needs to know of a workload (stored in ground_truth.json, so it can be recomputed)."""
    knob = lambda k: None if k is None else {"flag": k.flag, "value": k.value}  # noqa: E731
    return {
        "expect": workload.expect,
        "scale": knob(workload.scale),
        "steps": knob(workload.steps),
        "fix": None if workload.fix is None else {"flag": workload.fix.flag, "value": workload.fix.value,
                                                   "kind": workload.fix.kind, "text": workload.fix.text},
        "growth_holder": workload.growth_holder,
        "progress": workload.progress,
        "storing_line": getattr(workload, "storing_line", None),
    }


def steps_completed(log_text: str, progress: str) -> int:
    pattern = re.compile(progress)
    return sum(1 for line in log_text.splitlines() if pattern.search(line))


def outcome_of(runs: list[dict]) -> str:
    """oom | completed | the status that was neither (error, timeout, …) | not_run."""
    if not runs:
        return "not_run"
    if any(run.get("oom") for run in runs):
        return "oom"
    statuses = {run.get("status") for run in runs}
    return "completed" if statuses == {"completed"} else "/".join(sorted(str(s) for s in statuses))


def find_variant(variants: list[dict], **wanted) -> dict | None:
    for variant in variants:
        if all(str(variant.get(key)) == str(value) for key, value in wanted.items()):
            return variant
    return None


def confirming_runs(variants: list[dict], inputs: dict, args: list[str]) -> list[dict]:
    """The confirming runs that were made, each named by what it changed and how it ended."""
    wanted = [("expandable", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", {"kind": "allocator", "alloc_conf": EXPANDABLE})]
    for role in ("scale", "steps"):
        knob = inputs.get(role)
        if knob:
            value = current_value(args, knob["flag"], knob["value"])
            if value > 1:
                wanted.append((f"{role}_halved", f"{knob['flag']} {value} -> {value // 2}",
                               {"kind": "argument", "argument": knob["flag"], "value": value // 2}))
    fix = inputs.get("fix")
    if fix:
        wanted.append(("fix", f"{fix['flag']} {fix['value']} ({fix['text']})",
                       {"kind": "argument", "argument": fix["flag"], "value": fix["value"]}))
    made = []
    for role, change, keys in wanted:
        variant = find_variant(variants, **keys)
        made.append({"role": role, "change": change, "label": variant["label"] if variant else None,
                     "outcome": outcome_of(variant["runs"]) if variant else "not_run"})
    return made


def current_value(args: list[str], flag: str, default: int) -> int:
    """The value of ``flag`` in args (``--flag V`` or ``--flag=V``), else the script's default."""
    for index, arg in enumerate(args):
        if arg == flag and index + 1 < len(args):
            return int(args[index + 1])
        if arg.startswith(flag + "="):
            return int(arg.split("=", 1)[1])
    return int(default)


def end_state(meta: dict) -> dict:
    stats = meta.get("stats") or {}
    oom = meta.get("oom") or {}
    environment = meta.get("environment") or {}
    total = environment.get("total_memory")
    outside = None
    if oom and isinstance(total, int) and isinstance(oom.get("device_free"), int) and isinstance(oom.get("reserved"), int):
        outside = max(0, total - oom["device_free"] - oom["reserved"])
    return {
        "status": meta.get("status"),
        "oom": bool(oom) or meta.get("status") == "oom",
        "memory_limit": (meta.get("memory_limit") or {}).get("bytes"),
        "total_memory": total,
        "oom_request": oom.get("requested"),
        "allocated_at_oom": oom.get("allocated"),
        "reserved_at_oom": oom.get("reserved"),
        "outside_at_oom": outside,
        "peak_allocated": stats.get("peak_allocated"),
        "peak_reserved": stats.get("peak_reserved"),
        "end_allocated": stats.get("allocated"),
        "end_reserved": stats.get("reserved"),
    }


def judge(inputs: dict, meta: dict, log_text: str, variants: list[dict], args: list[str]) -> dict:
    """The measured cause (or None), the rule that decided it, and the evidence in sentences."""
    state = end_state(meta)
    state["steps_completed"] = steps_completed(log_text, inputs["progress"])
    runs = confirming_runs(variants, inputs, args)
    baseline = find_variant(variants, kind="baseline")
    baseline_outcome = outcome_of(baseline["runs"]) if baseline else "not_run"
    result = {"measured": state, "baseline_confirming_run": baseline_outcome, "confirming_runs": runs,
              "rules_version": RULES_VERSION}
    if not state["oom"]:
        return dict(result, **(_grew(state, runs, variants, inputs, baseline) or _completed(state)))
    return dict(result, **_out_of_memory(state, runs, baseline_outcome, inputs))


def _peak_of(variants: list[dict], keys: dict | None) -> int | None:
    variant = find_variant(variants, **keys) if keys else None
    runs = (variant or {}).get("runs") or []
    peaks = [run.get("peak_allocated") for run in runs if run.get("status") == "completed"]
    return max(peaks) if peaks and all(isinstance(p, int) for p in peaks) else None


def _grew(state: dict, runs: list[dict], variants: list[dict], inputs: dict, baseline: dict | None) -> dict | None:
    """A completed run whose memory grows with its number of steps (G1-G3), measured by its confirming runs:
    growth before the limit is the same cause as growth that reached it. None: not measured, or no growth."""
    if state["status"] != "completed" or baseline is None:
        return None
    full = _peak_of(variants, {"kind": "baseline"})
    steps = inputs.get("steps")
    halved_run = next((run for run in runs if run["role"] == "steps_halved"), None)
    if full is None or not steps or halved_run is None or halved_run["outcome"] != "completed":
        return None
    value = None
    for variant in variants:
        if variant.get("kind") == "argument" and variant.get("argument") == steps["flag"]:
            value = variant.get("value")
    halved = _peak_of(variants, {"kind": "argument", "argument": steps["flag"], "value": value}) if value else None
    if halved is None or full - halved < max(GROWTH_SHARE * full, GROWTH_MIN_BYTES):
        return None
    said = [f"Completed with a peak of {_gib(full)} allocated; with the steps halved ({halved_run['change']}) the "
            f"peak was {_gib(halved)}: memory grows with the steps."]
    if inputs.get("growth_holder") in INTENDED_CACHES:
        return {"cause": "no_problem", "detail": "intended cache grows", "rule": "G2", "evidence": said + [
            "The growth is a cache that grows by design, and the run completed."]}
    fix = inputs.get("fix") or {}
    fixed = _peak_of(variants, {"kind": "argument", "argument": fix.get("flag"), "value": fix.get("value")}) \
        if fix.get("kind") == "drop_references" else None
    if fixed is not None and full - fixed >= max(GROWTH_SHARE * full, GROWTH_MIN_BYTES):
        return {"cause": "retained_references", "detail": "growth before the limit", "rule": "G1", "evidence": said + [
            f"No longer keeping the earlier steps' tensors ({fix.get('text')}) lowered the peak to {_gib(fixed)}."]}
    return {"cause": None, "detail": "growth, holder unconfirmed", "rule": "G3", "evidence": said + [
        "No run confirmed who holds the growth."]}


def _completed(state: dict) -> dict:
    allocated, reserved = state["end_allocated"], state["end_reserved"]
    if state["status"] != "completed" or allocated is None or reserved is None:
        return {"cause": None, "detail": None, "rule": "C0",
                "evidence": [f"The run ended {state['status']} without an OOM, so there is no cause to measure."]}
    cached = reserved - allocated
    if cached >= CACHE_GAP and reserved >= CACHE_RATIO * max(allocated, 1):
        return {"cause": "cached_not_leak", "detail": "cache at the end", "rule": "C1", "evidence": [
            f"Completed with {_gib(allocated)} allocated and {_gib(reserved)} reserved at the end: "
            f"{_gib(cached)} is PyTorch's cache."]}
    return {"cause": "no_problem", "detail": None, "rule": "C2", "evidence": [
        f"Completed with {_gib(allocated)} allocated and {_gib(reserved)} reserved at the end."]}


def _out_of_memory(state: dict, runs: list[dict], baseline: str, inputs: dict) -> dict:
    prevents = {run["role"]: run["outcome"] == "completed" for run in runs}
    stays = {run["role"]: run["outcome"] == "oom" for run in runs}
    said = [f"{run['change']}: {_ending(run['outcome'])}" for run in runs if run["outcome"] != "not_run"]
    steps = state["steps_completed"]
    said.append(f"The recorded run completed {steps} step(s) before its OOM.")
    if baseline == "not_run":
        return {"cause": None, "detail": "no confirming runs", "rule": "R0", "evidence": [
            "No confirming run was made, so nothing measured the cause."] + said}
    if baseline != "oom":
        return {"cause": None, "detail": "not reproduced", "rule": "R0", "evidence": [
            f"The confirming baseline run ended {baseline}, not out of memory: the OOM did not reproduce."] + said}
    fix = inputs.get("fix") or {}
    outside, total = state["outside_at_oom"], state["total_memory"]
    if (state["memory_limit"] is None and outside is not None and total and outside >= OUTSIDE_SHARE * total
            and prevents.get("fix") and fix.get("kind") == "release_other_library"):
        return {"cause": "outside_allocator", "detail": None, "rule": "R1", "evidence": [
            f"At the OOM {_gib(outside)} of the device's {_gib(total)} was held outside PyTorch's allocator, "
            "and making the other library release it prevented the OOM."] + said}
    if prevents.get("expandable"):
        return {"cause": "fragmentation", "detail": None, "rule": "R2", "evidence": [
            "expandable_segments:True prevented the OOM under the same cap: the live set fit, the cache's "
            "split did not."] + said}
    if prevents.get("steps_halved") and steps >= GROWTH_MIN_STEPS:
        if inputs.get("growth_holder") in INTENDED_CACHES:
            whose = "the library's" if inputs["growth_holder"] == "library_cache" else "the program's own"
            return {"cause": "working_set", "detail": "intended cache", "rule": "R3a", "evidence": [
                f"Memory grew over {steps} steps and halving them prevented the OOM; the growth is {whose} "
                "cache, which the full run needs."] + said}
        if prevents.get("fix") and fix.get("kind") == "drop_references":
            return {"cause": "retained_references", "detail": None, "rule": "R3b", "evidence": [
                f"Memory grew over {steps} steps, halving them prevented the OOM, and so did no longer keeping the "
                "earlier steps' tensors."] + said}
        return {"cause": None, "detail": "growth, holder unconfirmed", "rule": "R3c", "evidence": [
            f"Memory grew over {steps} steps and halving them prevented the OOM, but no run confirmed who holds "
            "the growth."] + said}
    first_step = steps < GROWTH_MIN_STEPS or stays.get("steps_halved")
    shrinks = prevents.get("scale_halved") or (prevents.get("fix") and fix.get("kind") == "shrink_working_set")
    if first_step and shrinks:
        return {"cause": "working_set", "detail": "one step", "rule": "R4", "evidence": [
            "The OOM comes within one step (halving the steps did not prevent it), and a smaller working set of "
            "that step did."] + said}
    return {"cause": None, "detail": "no measurement singles out a cause", "rule": "R5", "evidence": said}


def _ending(outcome: str) -> str:
    return {"completed": "completed (prevents the OOM)", "oom": "still out of memory"}.get(outcome, f"ended {outcome}")


def _gib(value) -> str:
    return "?" if value is None else f"{value / GIB:.2f} GiB"


def primary_capture_meta(capture_dir: Path) -> dict:
    """capture.json of a run's capture; for a torchrun launch, that of rank 0."""
    for candidate in (capture_dir / "capture.json", capture_dir / "rank-0" / "capture.json"):
        if candidate.is_file():
            return json.loads(candidate.read_text())
    return {}


def recompute(fixture: Path) -> dict:
    recorded = json.loads((fixture / "ground_truth.json").read_text())
    meta = primary_capture_meta(fixture / "capture")
    log = (fixture / "run.log").read_text(errors="replace") if (fixture / "run.log").is_file() else ""
    experiment = fixture / "experiment.json"
    variants = json.loads(experiment.read_text())["variants"] if experiment.is_file() else []
    return judge(recorded["inputs"], meta, log, variants, recorded["recorded"]["args"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fixture", type=Path)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    result = recompute(args.fixture)
    print(f"{args.fixture.name}: {result['cause']} ({result['rule']})")
    for sentence in result["evidence"]:
        print(f"  - {sentence}")
    if args.check:
        stored = json.loads((args.fixture / "ground_truth.json").read_text())
        if (stored["cause"], stored["rule"]) != (result["cause"], result["rule"]):
            print(f"ground_truth.json says {stored['cause']} ({stored['rule']})", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
