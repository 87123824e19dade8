"""The confirming experiment: which one each diagnosis gets, and what its outcome means."""

from vramlens.analysis.model import Diagnosis
from vramlens.analysis.diagnosis.confirm import ALLOCATOR, BATCH, GROWTH, judge, plan_for, plan_kind

GIB = 1024 ** 3


def _plan(cause, alternative=None, argv=("train.py",), limit=4 * GIB, cache=False, requested="4GiB"):
    meta = {"argv": list(argv), "memory_limit": {"requested": requested} if requested else None}
    return plan_for(Diagnosis(cause, 0.6, [], alternative=alternative), meta, limit, cache)


def test_fragmentation_and_a_working_set_close_to_it_are_told_apart_by_expandable_segments():
    for plan in (_plan("fragmentation", "working_set"), _plan("working_set", "fragmentation")):
        assert plan_kind(plan) == ALLOCATOR
        assert plan.variants == [{"kind": "allocator", "setting": "expandable_segments:True"}]
        assert plan.command == "vramlens run --confirm --memory-limit 4GiB train.py"


def test_growth_uses_a_steps_argument_when_there_is_one_else_a_smaller_limit():
    with_flag = _plan("retained_references", argv=("train.py", "--steps", "40", "--batch-size", "8"))
    assert plan_kind(with_flag) == GROWTH and with_flag.variants == [{"kind": "argument", "flag": "--steps", "value": "20"}]
    without = _plan("retained_references", argv=("train.py", "--batch-size", "8"))
    assert without.variants == [{"kind": "memory_limit", "value": "3.00GiB"}]  # 75 % of the 4 GiB it failed under
    kv = _plan("working_set", cache=True, argv=("gen.py", "--max-new-tokens=512"))
    assert kv.variants == [{"kind": "argument", "flag": "--max-new-tokens", "value": "256"}]


def test_a_plain_working_set_halves_the_batch_and_nothing_is_run_for_outside_memory_or_completed_runs():
    plan = _plan("working_set", argv=("train.py", "--batch-size=64"))
    assert plan_kind(plan) == BATCH and plan.variants == [{"kind": "argument", "flag": "--batch-size", "value": "32"}]
    assert plan_kind(_plan("working_set")) == ALLOCATOR  # no batch argument: rule fragmentation out instead
    for cause in ("outside_allocator", "no_problem", "cached_not_leak"):
        assert _plan(cause) is None


def test_verdicts():
    oom, fits = {"oom": True, "completed_steps": 5}, {"oom": False, "completed_steps": 9}
    assert judge("fragmentation", "working_set", ALLOCATOR, oom, fits)["verdict"] == "confirmed"
    revised = judge("fragmentation", "working_set", ALLOCATOR, oom, oom)
    assert revised["verdict"] == "revised" and revised["cause"] == "working_set"
    assert judge("working_set", "fragmentation", ALLOCATOR, oom, fits)["cause"] == "fragmentation"
    assert judge("retained_references", None, GROWTH, oom, {"oom": True, "completed_steps": 3})["verdict"] == "confirmed"
    same_step = judge("retained_references", "working_set", GROWTH, oom, {"oom": True, "completed_steps": 5})
    assert same_step["cause"] == "working_set" and same_step["verdict"] == "revised"
    assert judge("working_set", "retained_references", GROWTH, oom, fits)["cause"] == "retained_references"
    assert judge("working_set", None, GROWTH, oom, fits)["verdict"] == "confirmed"  # a KV cache: growth as designed
    assert judge("working_set", None, BATCH, oom, oom)["verdict"] == "inconclusive"
    assert judge("working_set", None, ALLOCATOR, fits, fits)["verdict"] == "inconclusive"  # no OOM to explain
