"""The line the user is sent to, on the real captures (tests/fixtures/realworld): the statement that keeps the
memory, the holder that grew, the library's own remedy — against benchmarks/storing_truth.json, read off each
workload's script by hand. The same measure is printed by benchmarks/storing_lines.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vramlens.analysis import analyze_path
from vramlens.analysis.compare.diff import diff_analyses, diff_to_json
from vramlens.analysis.rendering.json_export import to_json
from vramlens.lsp.annotations import line_annotations, storing_lens

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "fixtures" / "realworld"
TRUTH = {name: entry for name, entry in json.loads((REPO / "benchmarks" / "storing_truth.json").read_text()).items()
         if not name.startswith("_") and (CORPUS / name / "capture").exists()}
_CACHE: dict = {}


def analysis(name: str):
    if name not in _CACHE:
        _CACHE[name] = analyze_path(CORPUS / name / "capture", source_root=str(REPO / "workloads" / family(name)))
    return _CACHE[name]


def family(name: str) -> str:
    """workloads/<family>/ holds the scripts the workload ran (copied into its neutral folder to run)."""
    from harness.workloads import manifest

    return manifest.BY_NAME[name].family


def short(path, line) -> str:
    return f"{str(path).rsplit('/', 1)[-1]}:{line}"


def first_link(result) -> str | None:
    return next((short(a.arguments["path"], a.arguments["line"]) for r in result.recommendations for a in r.actions
                 if a.kind == "open_line"), None)


def test_the_truth_covers_the_corpus_retention_and_library_cases():
    assert len(TRUTH) >= 8 and sum(1 for entry in TRUTH.values() if entry["storing"]) >= 5


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_the_first_link_and_the_code_lens_go_to_the_line_to_change(name):
    expected, result = TRUTH[name]["first_line"], analysis(name)
    assert first_link(result) == expected, [r.action for r in result.recommendations]
    lens = storing_lens(result)
    assert lens is not None and short(lens.local_path, lens.def_line) == expected


@pytest.mark.parametrize("name", sorted(n for n in TRUTH if TRUTH[n]["storing"]))
def test_the_storing_line_carries_the_strongest_figure_and_the_allocation_line_points_at_it(name):
    result = analysis(name)
    storing = result.storing[0]
    assert short(storing.path, storing.line) == TRUTH[name]["storing"]
    figures = [a for annotations in line_annotations(result).values() for a in annotations]
    strongest = max(figures, key=lambda a: a.share)
    assert short(strongest.local_path, strongest.line) == TRUTH[name]["storing"] and strongest.text.startswith("keeps ")
    allocated = next(a for a in figures if (storing.allocated_at[0].rsplit("/", 1)[-1], storing.allocated_at[1])
                     == (a.local_path.rsplit("/", 1)[-1], a.line))
    if allocated.line != storing.line:
        assert f"kept by `{storing.target}` at line {storing.line}" in allocated.hover
    data = to_json(result)
    assert data["storing"][0]["line"] == storing.line and data["storing"][0]["allocated_at"]["line"] == storing.allocated_at[1]


@pytest.mark.parametrize("name", sorted(n for n in TRUTH if TRUTH[n]["holder"]))
def test_the_top_holder_is_the_one_that_grew(name):
    result = analysis(name)
    top = next(h for h in result.holders if not h.working_set and h.kind != "cache")
    assert top.root == TRUTH[name]["holder"] and top.survivor_bytes and top.stored_at is not None


@pytest.mark.parametrize("name", sorted(n for n in TRUTH if TRUTH[n]["remedy"]))
def test_each_library_case_gets_its_librarys_remedy(name):
    remedies = [r.remedy for r in analysis(name).recommendations if r.remedy]
    assert TRUTH[name]["remedy"] in remedies
    assert len(remedies) == len(set(remedies))  # each remedy once


def test_a_trainer_evaluation_is_told_the_trainers_option_not_accelerates():
    remedies = [r.remedy for r in analysis("hf_trainer_eval_gather").recommendations if r.remedy]
    assert remedies == ["trainer_eval_gather"]  # the Trainer runs on accelerate: one remedy, the one the user sets


def test_a_completed_run_that_grew_step_after_step_is_the_leak_it_will_become():
    result = analysis("losses_append_graph")  # completed; the floor rose 40 MiB -> 6.2 GiB over 40 steps
    assert result.diagnosis.cause == "retained_references"
    assert any("projected to run out at step" in fact for fact in result.diagnosis.evidence)
    others = [n for n in ("checkpoint_cpu_load", "compile_fits", "hf_trainer_eval_accumulate", "nanogpt_fits",
                          "jax_no_preallocate") if (CORPUS / n / "capture").exists()]
    for name in others:  # completed runs whose floor did not climb stay what they were
        assert analyze_path(CORPUS / name / "capture").diagnosis.cause in ("no_problem", "cached_not_leak"), name


def test_diff_of_a_real_fix_says_the_growth_is_gone_and_the_run_completes():
    before, after = analysis("hf_trainer_eval_gather"), analysis_of("hf_trainer_eval_accumulate")
    diff = diff_to_json(diff_analyses(before, after))
    assert diff["before"]["outcome"] == "oom" and diff["after"]["outcome"] == "completed"
    assert diff["after"]["peak_allocated"] < diff["before"]["peak_allocated"]
    assert diff["before"]["growth"] > 500 * 2**20 and diff["after"]["growth"] < 2**20
    assert "removed" in diff["sentence"] and "now completes" in diff["sentence"]
    assert any(item["label"] == "evaluate_gather.py:85" and item["growth_after"] < item["growth_before"]
               for item in diff["lines"])


def analysis_of(name: str):
    return analyze_path(CORPUS / name / "capture", source_root=str(REPO / "workloads" / "hf_trainer"))


def test_vramlens_diff_prints_text_and_json():
    before, after = (str(CORPUS / name / "capture") for name in ("hf_trainer_eval_gather", "hf_trainer_eval_accumulate"))
    command = [sys.executable, "-m", "vramlens", "diff", before, after]
    env = {"PYTHONPATH": str(REPO / "server"), "PATH": "/usr/bin:/bin"}
    text = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert text.returncode == 0, text.stderr
    assert "now completes" in text.stdout and "peak allocated" in text.stdout and "−" in text.stdout
    data = json.loads(subprocess.run(command + ["--json"], capture_output=True, text=True, timeout=300, env=env).stdout)
    assert data["format"] == "vramlens-diff" and data["before"]["cause"] == "retained_references"
    missing = subprocess.run([sys.executable, "-m", "vramlens", "diff", before, str(CORPUS / "nowhere")],
                             capture_output=True, text=True, timeout=60, env=env)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1  # one sentence


def test_run_compare_to_a_capture_that_is_not_there_runs_nothing(tmp_path):
    script = tmp_path / "never_run.py"
    script.write_text("open(__file__ + '.ran', 'w').write('ran')\n")
    env = {"PYTHONPATH": str(REPO / "server"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "vramlens", "run", "--compare-to", str(tmp_path / "nowhere"), str(script)],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2 and "no capture there" in done.stderr
    assert not (tmp_path / "never_run.py.ran").exists()


ROUND4 = CORPUS / "round4"


@pytest.mark.skipif(not (ROUND4 / "eval_outputs_kept.tar.xz").exists(), reason="round 4's captures are not here")
def test_vramlens_diff_on_a_before_after_pair_recorded_on_the_gpu(tmp_path):
    """eval_outputs_kept (every batch's logits appended with their graphs) and eval_outputs_fixed (the predicted
    ids appended on the CPU): the same evaluation before and after its fix, recorded on the H200."""
    import tarfile

    for name in ("eval_outputs_kept", "eval_outputs_fixed"):
        with tarfile.open(ROUND4 / f"{name}.tar.xz") as bundle:
            bundle.extractall(tmp_path, filter="data")
    before, after = (str(tmp_path / name / "capture") for name in ("eval_outputs_kept", "eval_outputs_fixed"))
    env = {"PYTHONPATH": str(REPO / "server"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "vramlens", "diff", "--json", before, after,
                           "--source-root", str(REPO / "workloads" / family("eval_outputs_kept"))],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    diff = json.loads(done.stdout)
    assert diff["before"]["cause"] == "retained_references" and diff["after"]["cause"] != "retained_references"
    assert diff["after"]["peak_allocated"] < 0.5 * diff["before"]["peak_allocated"]
    assert diff["before"]["growth"] > 10 * max(diff["after"]["growth"] or 0, 2**20)
    assert "removed" in diff["sentence"] and "eval_keep_outputs.py:36" in diff["sentence"]
    assert any("--fixed 1" in note for note in diff["notes"])  # the change: the fix's flag


def test_a_notebook_cell_that_builds_the_list_is_its_storing_line():
    # tests/fixtures/captures/notebook_kept_outputs: `losses = [loss_of(4096) for _ in range(8)]` in cell 6 keeps
    # eight losses with their graphs; the cell allocated nothing itself (loss_of, in another cell, did)
    result = analyze_path(REPO / "tests" / "fixtures" / "captures" / "notebook_kept_outputs", source_root=str(REPO))
    storing = result.storing[0]
    assert (storing.holder, storing.kind, storing.line) == ("__main__.losses", "built", 1)
    assert storing.cell is not None and storing.label.endswith("cell 6 line 1")
    assert first_link(result) is not None and "cell 6 line 1" in result.recommendations[0].action
