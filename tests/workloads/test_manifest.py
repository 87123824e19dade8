"""Every workload the driver records exists and takes the arguments the driver will give it.

A static check on the scripts' own argparse definitions (or nanoGPT's configuration globals), so a
misspelt flag fails here instead of on the GPU machine; the CPU dry run
(workloads/dryrun/check_workloads.py) then runs them.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

from harness.workloads import manifest, record

BY_NAME, WORKLOADS = manifest.BY_NAME, manifest.WORKLOADS
select_workloads, variant_specs_of = record.select_workloads, record.variant_specs_of

CAUSES = {"working_set", "retained_references", "fragmentation", "outside_allocator", "cached_not_leak", "no_problem"}


def accepted_flags(script: Path) -> set[str]:
    source = script.read_text()
    flags = set(re.findall(r"add_argument\(\s*\"(--[a-z0-9-]+)\"", source))
    # nanoGPT: every module-level `name = value` before configurator.py runs is a --name=value override
    flags |= {f"--{name}" for name in re.findall(r"^([a-z_0-9]+) = ", source.split("exec(open('configurator.py')")[0], re.M)}
    return flags


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.name)
def test_the_script_takes_every_argument_of_its_runs(workload):
    script = ROOT / "workloads" / workload.family / workload.script
    if not script.exists() and workload.family.startswith("public/"):
        pytest.skip(f"{script.name} is third-party code, placed here only to record the corpus")
    flags = accepted_flags(script)
    given = {arg.split("=")[0] for arg in workload.args if arg.startswith("--")}
    changed = {spec.split("=")[0] for kind, spec in variant_specs_of(workload, list(workload.args)) if kind == "argument"}
    sized = set(workload.sized_by)
    assert given | changed | sized <= flags, f"{script.name} does not take {sorted((given | changed | sized) - flags)}"
    assert workload.intent in CAUSES


def test_every_counter_case_takes_its_cap_from_a_case_of_the_same_script():
    for workload in WORKLOADS:
        if workload.cap_from:
            case = BY_NAME[workload.cap_from]
            assert (case.family, case.script, case.calibration is not None) == (workload.family, workload.script, True)
            assert workload.expect == "completes" and case.expect == "oom"


def test_each_family_has_a_case_and_a_counter_with_another_cause():
    by_family = {}
    for workload in WORKLOADS:
        by_family.setdefault(workload.family.split("/")[0], set()).add(workload.intent)
    assert all(len(intents) >= 2 for intents in by_family.values()), by_family
    assert len(WORKLOADS) >= 16


def test_nanogpt_is_used_as_published_with_its_licence():
    folder = ROOT / "workloads" / "public" / "nanogpt"
    assert "3adf61e154c3fe3fca428ad6bc3818b27a3b8291" in (folder / "SOURCE.md").read_text()
    if not (folder / "train.py").exists():
        pytest.skip("nanoGPT's files are third-party code, placed here only to record the corpus (SOURCE.md)")
    assert "MIT License" in (folder / "LICENSE").read_text()
    assert "exec(open('configurator.py').read())" in (folder / "train.py").read_text()


def test_round_three_is_a_held_out_set_with_its_counter_cases():
    fresh = [w for w in WORKLOADS if w.round == 3]
    # A round-3 workload leaves the held-out set only explicitly, once the engine was changed because of it.
    assert all(w.held_out in (True, False) for w in fresh)
    assert len([w for w in fresh if w.is_held_out]) >= 8
    new_families = {w.family for w in fresh if all(o.round == 3 for o in WORKLOADS if o.family == w.family)}
    by_family = {}
    for workload in fresh:
        if workload.family in new_families:
            by_family.setdefault(workload.family, set()).add(workload.intent)
    assert len(by_family) >= 4 and all(len(intents) >= 2 for intents in by_family.values()), by_family
    assert {w.intent for w in fresh} >= {"working_set", "retained_references", "fragmentation", "cached_not_leak", "no_problem"}


def test_the_first_rounds_keep_their_split():
    import hashlib
    for workload in WORKLOADS:
        if workload.round == 1:
            assert workload.is_held_out == (hashlib.sha1(workload.name.encode()).hexdigest()[-1] in "01234")


def test_recording_one_round_selects_that_round_only():
    assert [w.name for w in select_workloads(round_=3)] == [w.name for w in WORKLOADS if w.round == 3]
    assert select_workloads(only=["kv_cache_sized"], round_=3) == [BY_NAME["kv_cache_static_too_long"], BY_NAME["kv_cache_sized"]]
    assert len(select_workloads()) == len(WORKLOADS)
