"""The ground-truth rule of workloads/README.md, rule by rule, on the fields it reads.

Inputs are the few fields of capture.json and experiment.json that the rule looks at, shaped as
`vramlens run` and `vramlens experiment` write them; each test changes one measurement and checks
that the cause follows it (and that the workload's intent never enters).
"""

import pytest

from harness.workloads import ground_truth

GIB = 2**30
INPUTS = {
    "expect": "oom",
    "scale": {"flag": "--batch-size", "value": 32},
    "steps": {"flag": "--steps", "value": 8},
    "fix": {"flag": "--fixed", "value": "1", "kind": "drop_references", "text": "keep loss.item()"},
    "growth_holder": None,
    "progress": r"^\[progress\] ",
}
ARGS = ["--batch-size", "32", "--steps", "8"]


def oom_meta(cap=4 * GIB, outside=0):
    total = 140 * GIB
    reserved = 3 * GIB
    return {"status": "oom", "memory_limit": {"bytes": cap} if cap else None,
            "environment": {"total_memory": total},
            "oom": {"requested": GIB, "allocated": 2 * GIB, "reserved": reserved,
                    "device_free": total - reserved - outside},
            "stats": {"allocated": 2 * GIB, "reserved": reserved, "peak_allocated": 3 * GIB, "peak_reserved": 3 * GIB}}


def variant(kind, outcome, **keys):
    run = {"status": "oom" if outcome == "oom" else outcome, "oom": outcome == "oom"}
    return dict({"kind": kind, "label": kind, "alloc_conf": None, "argument": None, "value": None}, runs=[run], **keys)


def variants(expandable="oom", scale="oom", steps="oom", fix="oom", baseline="oom"):
    return [variant("baseline", baseline),
            variant("allocator", expandable, alloc_conf="expandable_segments:True"),
            variant("argument", scale, argument="--batch-size", value="16"),
            variant("argument", steps, argument="--steps", value="4"),
            variant("argument", fix, argument="--fixed", value="1")]


def log(steps):
    return "".join(f"[progress] step {n + 1} done\n" for n in range(steps))


def judge(meta=None, steps=0, inputs=INPUTS, **outcomes):
    return ground_truth.judge(inputs, meta or oom_meta(), log(steps), variants(**outcomes), ARGS)


def test_not_reproduced_names_no_cause():
    result = judge(baseline="completed", scale="completed")
    assert (result["cause"], result["rule"]) == (None, "R0")


def test_expandable_segments_preventing_the_oom_is_fragmentation():
    result = judge(expandable="completed", scale="completed", steps=5)
    assert (result["cause"], result["rule"]) == ("fragmentation", "R2")


def test_nothing_preventing_the_oom_names_no_cause():
    result = judge(steps=5)
    assert (result["cause"], result["rule"]) == (None, "R5")


def test_growth_that_the_fix_removes_is_retained_references():
    result = ground_truth.judge(INPUTS, oom_meta(), log(5), variants(steps="completed", fix="completed"), ARGS)
    assert (result["cause"], result["rule"]) == ("retained_references", "R3b")


def test_growth_in_the_first_step_is_not_retention():
    result = ground_truth.judge(INPUTS, oom_meta(), log(1), variants(steps="completed", fix="completed", scale="completed"), ARGS)
    assert result["cause"] == "working_set"


@pytest.mark.parametrize("holder", ["library_cache", "own_cache"])
def test_growth_held_by_a_cache_by_design_is_the_working_set(holder):
    inputs = dict(INPUTS, fix=None, growth_holder=holder)
    result = ground_truth.judge(inputs, oom_meta(), log(100), variants(steps="completed", scale="completed"), ARGS)
    assert (result["cause"], result["detail"], result["rule"]) == ("working_set", "intended cache", "R3a")
    assert ("library's" if holder == "library_cache" else "program's own") in result["evidence"][0]


def test_an_undeclared_holder_is_not_an_intended_cache():
    inputs = dict(INPUTS, fix=None, growth_holder="something_else")
    result = ground_truth.judge(inputs, oom_meta(), log(100), variants(steps="completed", scale="completed"), ARGS)
    assert result["rule"] != "R3a"


def test_growth_without_a_confirming_fix_stays_unnamed():
    result = ground_truth.judge(INPUTS, oom_meta(), log(6), variants(steps="completed", fix="oom"), ARGS)
    assert (result["cause"], result["rule"]) == (None, "R3c")


def test_first_step_oom_that_a_smaller_batch_prevents_is_the_working_set():
    result = judge(scale="completed", steps=0)
    assert (result["cause"], result["rule"]) == ("working_set", "R4")


def test_a_shrinking_fix_counts_for_the_working_set_but_a_dropping_fix_does_not():
    shrink = dict(INPUTS, fix=dict(INPUTS["fix"], kind="shrink_working_set"))
    assert ground_truth.judge(shrink, oom_meta(), "", variants(fix="completed"), ARGS)["cause"] == "working_set"
    assert ground_truth.judge(INPUTS, oom_meta(), "", variants(fix="completed"), ARGS)["rule"] == "R5"


def test_memory_outside_pytorch_that_the_other_library_releases_is_outside_allocator():
    inputs = dict(INPUTS, fix=dict(INPUTS["fix"], kind="release_other_library"))
    meta = oom_meta(cap=None, outside=100 * GIB)
    result = ground_truth.judge(inputs, meta, "", variants(fix="completed", scale="completed"), ARGS)
    assert (result["cause"], result["rule"]) == ("outside_allocator", "R1")
    assert result["measured"]["outside_at_oom"] == 100 * GIB


def test_outside_needs_the_memory_to_be_outside_and_no_cap():
    inputs = dict(INPUTS, fix=dict(INPUTS["fix"], kind="release_other_library"))
    little_outside = ground_truth.judge(inputs, oom_meta(cap=None, outside=GIB), "", variants(fix="completed", scale="completed"), ARGS)
    capped = ground_truth.judge(inputs, oom_meta(cap=4 * GIB, outside=100 * GIB), "", variants(fix="completed", scale="completed"), ARGS)
    assert little_outside["cause"] == capped["cause"] == "working_set"


@pytest.mark.parametrize("allocated, reserved, cause", [
    (0, 9 * GIB, "cached_not_leak"),
    (200 * 2**20, 900 * 2**20, "no_problem"),  # less than 1 GiB cached
    (6 * GIB, 9 * GIB, "no_problem"),  # reserved not twice allocated
])
def test_completed_runs_are_judged_on_their_end_state(allocated, reserved, cause):
    meta = {"status": "completed", "oom": None, "stats": {"allocated": allocated, "reserved": reserved}}
    assert ground_truth.judge(INPUTS, meta, "", [], ARGS)["cause"] == cause


def test_a_run_that_crashed_has_no_cause():
    meta = {"status": "error", "oom": None, "stats": {"allocated": 0, "reserved": 0}}
    assert ground_truth.judge(INPUTS, meta, "", [], ARGS)["rule"] == "C0"


def test_confirming_runs_are_matched_by_the_values_the_driver_halved():
    # nanoGPT style --flag=value arguments
    inputs = dict(INPUTS, scale={"flag": "--batch_size", "value": 12}, steps={"flag": "--max_iters", "value": 6}, fix=None)
    found = [variant("baseline", "oom"), variant("argument", "completed", argument="--batch_size", value="16")]
    result = ground_truth.judge(inputs, oom_meta(), "", found, ["--batch_size=32", "--max_iters=6"])
    roles = {run["role"]: run["outcome"] for run in result["confirming_runs"]}
    assert roles == {"expandable": "not_run", "scale_halved": "completed", "steps_halved": "not_run"}
    assert result["cause"] == "working_set"


def test_without_confirming_runs_nothing_is_named():
    result = ground_truth.judge(INPUTS, oom_meta(), log(0), [], ARGS)
    assert (result["cause"], result["detail"], result["rule"]) == (None, "no confirming runs", "R0")
