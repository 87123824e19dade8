"""The cause decision's mechanisms on hand-built facts, each beside the case it must leave alone:
a split cache met by a first forward pass at the very limit (working set, not fragmentation), cache
code that grows across training steps (retention, not a KV cache), and a container that keeps the
results of an outer loop the recorded steps cannot show (retention before fragmentation)."""

from vramlens.analysis.attribution.growth import Growth
from vramlens.analysis.attribution.roles import Census
from vramlens.analysis.diagnosis.classify import RunFacts, classify
from vramlens.analysis.model import Accounting, Holder, RoleShare, Step, StepModel

MIB = 1024 * 1024
SCRIPT = "/workspace/job/train.py"
LIBRARY = "/venv/lib/python3.12/site-packages/transformers/generation/utils.py"


def split_cache(allocated: int, request: int, limit: int, reserved: int) -> Accounting:
    """An OOM whose request fits the limit packed, but neither a free block nor the headroom holds it."""
    return Accounting(moment="oom", allocated=allocated, reserved=reserved, cached=reserved - allocated,
                      largest_free_block=2 * MIB, largest_free_pool="large", free_block_fits_request=False,
                      limit=limit, limit_is_cap=True, request=request, non_pytorch=0)


def census(roles=(), holders=(), stack=(), grad=True) -> Census:
    return Census(moment="oom", roles=[RoleShare(role, size, role) for role, size in roles], holders=list(holders),
                  grad_enabled=grad, main_stack=[{"filename": path, "line": line, "name": name} for path, line, name in stack])


def steps(floors: list[int], driver: str = f"{SCRIPT}:30 main", last_complete: bool = False) -> StepModel:
    made = [Step(number=i + 1, start_index=i, end_index=i + 1, start_time_us=None, end_time_us=None, floor_allocated=floor,
                 peak_allocated=floor + 50 * MIB, complete=i < len(floors) - 1 or last_complete)
            for i, floor in enumerate(floors)]
    return StepModel(steps=made, driver=driver, boundary=None)


def facts(**given) -> RunFacts:
    return RunFacts(outcome="oom", peak_allocated=0, peak_reserved=0, end_allocated=0, end_reserved=0, **given)


# A first forward pass: 6.5 GiB live, 96 % of it saved activations, a 244 MiB request with 8 MiB to spare packed.
FORWARD = split_cache(allocated=6659 * MIB, request=244 * MIB, limit=6911 * MIB, reserved=6682 * MIB)


def saving_forward(grad=True, activations=6413 * MIB) -> Census:
    return census(roles=[("activations", activations), ("inputs", FORWARD.allocated - activations)], grad=grad)


def test_a_first_forward_pass_still_saving_activations_at_the_limit_is_the_working_set():
    diagnosis = classify(FORWARD, [], facts(census=saving_forward(), grad_enabled=True))
    assert (diagnosis.cause, diagnosis.alternative) == ("working_set", "fragmentation")
    assert diagnosis.confidence < 0.75  # the allocator experiment still decides it
    text = " ".join(diagnosis.evidence)
    assert "activations saved for the backward" in text and "not room for one more of its size" in text
    assert "device itself may have had less free" not in text  # no piece could serve it: not the outside-memory story


def test_the_same_split_cache_stays_fragmentation_once_a_step_has_completed():
    completed = steps([400 * MIB, 400 * MIB, 400 * MIB])
    diagnosis = classify(FORWARD, [], facts(census=saving_forward(), grad_enabled=True, steps=completed))
    assert (diagnosis.cause, diagnosis.alternative) == ("fragmentation", "working_set")


def test_without_grad_or_saved_activations_a_first_pass_without_room_for_another_request_is_undecided():
    # Packed, 8 MiB would be left for a pass that repeats 244 MiB requests, and no step had completed: nothing
    # shows the pass fits even packed, with or without a graph being saved (round 6's running_max_batch_oom, a
    # no-grad first pass in this state, measured as the working set: expandable segments did not help)
    no_grad = classify(FORWARD, [], facts(census=saving_forward(grad=False), grad_enabled=False))
    few_saved = classify(FORWARD, [], facts(census=saving_forward(activations=500 * MIB), grad_enabled=True))
    for diagnosis in (no_grad, few_saved):
        assert (diagnosis.cause, diagnosis.alternative) == ("working_set", "fragmentation")
        assert diagnosis.confidence < 0.75
        assert "activations saved for the backward" not in " ".join(diagnosis.evidence)


def test_far_from_the_limit_a_split_cache_is_fragmentation_even_in_a_first_forward_pass():
    far = split_cache(allocated=768 * MIB, request=96 * MIB, limit=1600 * MIB, reserved=1536 * MIB)
    roles = census(roles=[("activations", 700 * MIB), ("inputs", 68 * MIB)])
    diagnosis = classify(far, [], facts(census=roles, grad_enabled=True))
    assert diagnosis.cause == "fragmentation" and diagnosis.confidence >= 0.75


def cache_growth() -> Growth:
    """Growth carried by code named as a cache: 196 MiB per step over 29 steps, the floor at the limit."""
    carriers = [((SCRIPT, 27), 5568 * MIB), ((SCRIPT, 52), 384 * MIB)]
    return Growth(rate=196 * MIB, intervals=29, rise=5760 * MIB, floor=6209 * MIB, excess=768 * MIB, carriers=carriers,
                  old=5568 * MIB, cache=5952 * MIB, steps_done=30)


CACHE_FULL = split_cache(allocated=6401 * MIB, request=192 * MIB, limit=6843 * MIB, reserved=6718 * MIB)


def test_cache_code_growing_across_training_steps_is_retention():
    diagnosis = classify(CACHE_FULL, [], facts(growth=cache_growth(), mode="training"))
    assert diagnosis.cause == "retained_references"
    assert "training step" in diagnosis.evidence[0] and "KV cache (a cache growing as designed)" not in " ".join(diagnosis.evidence)


def test_cache_code_growing_with_the_tokens_of_a_generation_is_the_working_set():
    for mode in ("inference", None):
        diagnosis = classify(CACHE_FULL, [], facts(growth=cache_growth(), mode=mode))
        assert diagnosis.cause == "working_set", mode
        assert diagnosis.evidence[0].startswith("KV cache (a cache growing as designed)")


def test_a_completed_training_run_whose_cache_code_grew_is_leaking():
    completed = RunFacts(outcome="completed", peak_allocated=6209 * MIB, peak_reserved=6400 * MIB,
                         end_allocated=6209 * MIB, end_reserved=6400 * MIB, growth=cache_growth(), mode="training")
    assert classify(CACHE_FULL, [], completed).cause == "retained_references"
    completed.mode = "inference"
    assert classify(CACHE_FULL, [], completed).cause != "retained_references"


# Batch generation: the trace's steps are the decoding steps of one generate() call at train.py:32;
# `kept` in main holds what 28 earlier calls of that line returned.
GENERATE = split_cache(allocated=5840 * MIB, request=20 * MIB, limit=6347 * MIB, reserved=6340 * MIB)
DECODING = steps([5737 * MIB + i * 3 * MIB for i in range(28)], driver=f"{LIBRARY}:3032 _sample")
STACK = [(SCRIPT, 44, "<module>"), (SCRIPT, 32, "main"), (LIBRARY, 2802, "generate"),
         (LIBRARY, 3045, "_sample")]


def kept(line: int = 32, length: int = 28, size: int = 5498 * MIB, kind: str = "frame") -> Holder:
    return Holder(root=f"local kept in main (train.py:{line})", kind=kind, bytes=size, tensors=64 * length,
                  length=length, appended_at=(SCRIPT, line))


def test_a_container_of_a_running_lines_earlier_results_is_retention_before_the_split_cache():
    diagnosis = classify(GENERATE, [], facts(census=census(holders=[kept()], stack=STACK, grad=False), steps=DECODING))
    assert diagnosis.cause == "retained_references"
    text = " ".join(diagnosis.evidence)
    assert "earlier calls" in text and "transformers/generation/utils.py:3032 _sample" in text
    assert "holds 2 more entries" in text  # 487 MiB left packed, 196 MiB per entry


def test_a_container_is_not_kept_across_calls_when_its_line_is_not_running_or_is_inside_the_step():
    for holder, stack in ((kept(line=38), STACK),  # made by a line that has returned
                          (kept(length=1), STACK),  # one call's result
                          (kept(size=500 * MIB), STACK),  # not what fills the memory
                          (kept(), [(LIBRARY, 3045, "_sample"), (SCRIPT, 32, "main")])):  # inside the recorded step
        diagnosis = classify(GENERATE, [], facts(census=census(holders=[holder], stack=stack, grad=False), steps=DECODING))
        assert diagnosis.cause == "fragmentation", (holder, stack)


def test_a_slow_keeping_beside_a_split_cache_leaves_the_cause_to_the_split_cache():
    # 28 entries of 4 MiB each: the 487 MiB left packed would hold over a hundred more.
    small = kept(size=112 * MIB)
    roomy = split_cache(allocated=200 * MIB, request=20 * MIB, limit=707 * MIB, reserved=700 * MIB)
    diagnosis = classify(roomy, [], facts(census=census(holders=[small], stack=STACK, grad=False), steps=DECODING))
    assert diagnosis.cause == "fragmentation"
