"""`vramlens experiment` as a process: each run is a fresh interpreter through the real runner and
agent, with the stand-in torch of tests/agent_double (a pretend 8 GiB device whose memory limit
fails allocations exactly; no fragmentation, no NVML). The real allocator is tested on the GPU by
tests/gpu/test_experiments.py."""

import json

from test_run_process import ENV, vramlens, write

GROW = (
    "import argparse, os, torch\n"
    "MiB = 1024 * 1024\n"
    "parser = argparse.ArgumentParser()\n"
    "parser.add_argument('--batch-size', type=int, default=8)\n"
    "args = parser.parse_args()\n"
    "print('noise on stdout that must not reach the JSON')\n"
    "fixed = torch.empty(64 * MiB)\n"
    "per_sample = 5 * MiB if 'expandable_segments:True' in os.environ.get('PYTORCH_CUDA_ALLOC_CONF', '') else 10 * MiB\n"
    "batch = torch.empty(args.batch_size * per_sample)\n"
)


def test_variants_reach_fresh_processes_and_are_compared(tmp_path):
    write(tmp_path, "grow.py", GROW)
    run = vramlens("experiment", "--json", "-o", tmp_path / "exp", "--memory-limit", "1GiB", "--repeats", "2",
                   "--variant", "expandable_segments:True", "--arg-values", "batch-size=50,100",
                   "grow.py", "--batch-size", "100", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    labels = [variant["label"] for variant in data["variants"]]
    assert labels == ["baseline", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "--batch-size 50", "--batch-size 100"]
    ooms = [variant["ooms"] for variant in data["variants"]]
    assert ooms == [2, 0, 0, 2]  # 64 MiB + 100 × 10 MiB > 1 GiB; half the bytes per sample, or half the batch, fit
    peaks = [variant["summary"]["peak_allocated"]["median"] for variant in data["variants"][1:3]]
    assert peaks == [564 * 1024**2] * 2
    assert data["variants"][1]["differences"][0]["real"] and not data["variants"][3]["differences"][0]["real"]
    assert data["chosen"]["source"] == "variants" and data["chosen"]["index"] in (1, 2)
    assert (tmp_path / "exp" / "experiment.json").exists()
    assert "must not reach" in (tmp_path / "exp" / "baseline" / "run-1.log").read_text()
    report = vramlens("report", tmp_path / "exp" / "baseline" / "run-1", cwd=tmp_path)
    assert "## Chosen intervention" in report.stdout and data["chosen"]["label"] in report.stdout


def test_find_max_bisects_real_runs_and_fits_the_slope(tmp_path):
    write(tmp_path, "grow.py", GROW)
    run = vramlens("experiment", "-o", tmp_path / "exp", "--find-max", "batch-size", "--limit", "1GiB",
                   "--lo", "8", "--step", "8", "grow.py", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "→ 96 fits; 104 does not." in run.stdout
    assert "peak allocated ≈ 64.00 MiB + 10.00 MiB per unit (R² 1.0000, 5 runs that fit); the fit reaches the limit at 96" in run.stdout
    data = json.loads((tmp_path / "exp" / "experiment.json").read_text())
    assert [probe["value"] for probe in data["search"]["probes"]] == [8, 16, 32, 64, 128, 96, 112, 104]
    assert data["variants"] == [] and data["chosen"]["label"] == "--batch-size 96"


def test_a_crashing_script_stops_the_experiment_with_one_sentence(tmp_path):
    write(tmp_path, "crash.py", "import torch\ntorch.empty(1024)\nraise ValueError('bad config')\n")
    run = vramlens("experiment", "--json", "-o", tmp_path / "exp", "--variant", "expandable_segments:True",
                   "crash.py", cwd=tmp_path)
    assert run.returncode == 2
    data = json.loads(run.stdout)
    assert data["stopped"].startswith("A run ended with status error (exit code 1), neither completed nor out of memory")
    assert data["variants"] == [] and (tmp_path / "exp" / "baseline" / "run-1.log").exists()
    assert "Traceback" not in run.stderr


def test_usage_errors_and_no_cuda_are_one_sentence(tmp_path):
    write(tmp_path, "grow.py", GROW)
    cases = [
        (["grow.py"], "give at least one variant"),
        (["--find-max", "batch-size", "grow.py"], "--find-max ARG and --limit SIZE go together"),
        (["--variant", "batch-size=8", "grow.py"], "is not a variant"),
        (["--variant", "expandable_segments:True", "--memory-limit", "lots", "grow.py"], "not a size"),
    ]
    for options, words in cases:
        run = vramlens("experiment", "-o", tmp_path / "exp", *options, cwd=tmp_path)
        assert run.returncode == 2 and words in run.stderr, (options, run.stderr)
        assert len(run.stderr.strip().splitlines()) == 1
    env_without_cuda = dict(ENV, DOUBLE_NO_CUDA="1")
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-m", "vramlens", "experiment", "-o", str(tmp_path / "nocuda"),
                          "--variant", "expandable_segments:True", "grow.py"], cwd=tmp_path, env=env_without_cuda,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "CUDA is not available" in run.stderr


def test_a_smaller_card_is_a_variant_too(tmp_path):
    write(tmp_path, "grow.py", GROW)
    run = vramlens("experiment", "--json", "-o", tmp_path / "exp", "--repeats", "1",
                   "--memory-limit-variant", "512MiB", "grow.py", "--batch-size", "50", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    baseline, small = json.loads(run.stdout)["variants"]
    assert small["label"] == "memory limit 512MiB" and small["kind"] == "memory_limit"
    assert baseline["ooms"] == 0 and small["ooms"] == 1
    assert small["differences"][0]["text"] == "caused an OOM (OOM in 1/1 runs against 0/1)"


def test_cancelling_keeps_what_was_measured(tmp_path, monkeypatch):
    import threading

    from vramlens.analysis.experiments.variants import parse_variants
    from vramlens.runner import RunOptions
    from vramlens.experiments.engine import ExperimentPlan, run_experiment

    script = write(tmp_path, "grow.py", GROW)
    monkeypatch.chdir(tmp_path)
    cancel, seen = threading.Event(), []

    def progress(text):
        seen.append(text)
        if len(seen) == 3:  # the third run is about to start: the user cancels
            cancel.set()

    plan = ExperimentPlan(script, ["--batch-size", "10"], parse_variants(["expandable_segments:True"]), repeats=2,
                          run=RunOptions(script=script, extra_env={"PYTHONPATH": ENV["PYTHONPATH"]}),
                          output_dir=tmp_path / "exp")
    data = run_experiment(plan, progress=progress, cancel=cancel)
    assert data["stopped"] == "The experiment was cancelled; the runs finished so far are kept."
    assert [len(variant["runs"]) for variant in data["variants"]] == [1, 1]
    assert seen[0] == "Run 1/4: baseline (repeat 1/2)"


def test_run_confirm_measures_the_runner_up_and_records_the_verdict(tmp_path):
    write(tmp_path, "grow.py", GROW)
    run = vramlens("run", "--confirm", "-o", tmp_path / "cap", "--memory-limit", "1GiB", "grow.py", "--batch-size", "100",
                   cwd=tmp_path, timeout=120)
    assert run.returncode == 1, run.stderr  # the script's own exit code: it ran out of memory
    assert "Confirmed by measurement: with half the batch the run fitted" in run.stderr
    meta = json.loads((tmp_path / "cap" / "capture.json").read_text())
    record = meta["confirmation"]
    assert record["variants"] == [{"kind": "argument", "flag": "--batch-size", "value": "50"}]
    assert record["baseline"]["oom"] is True and record["variant"]["oom"] is False
    assert record["result"]["verdict"] == "confirmed"
    analysed = json.loads(vramlens("analyze", "--json", tmp_path / "cap", cwd=tmp_path).stdout)
    assert analysed["measured"].startswith("Confirmed by measurement") and analysed["confirm"] is None
    assert analysed["confidence"] >= 0.9


def test_a_measurement_that_contradicts_the_diagnosis_revises_it(tmp_path):
    # Half the bytes per sample under expandable segments (the stand-in's way of "the setting helped"):
    # a diagnosis of working set whose confirming run is the allocator experiment gets revised.
    write(tmp_path, "grow.py", GROW.replace("'--batch-size'", "'--items'").replace("args.batch_size", "args.items"))
    run = vramlens("run", "--confirm", "-o", tmp_path / "cap", "--memory-limit", "1GiB", "grow.py", "--items", "100",
                   cwd=tmp_path, timeout=120)
    assert "Revised by measurement to fragmentation" in run.stderr, run.stderr
    analysed = json.loads(vramlens("analyze", "--json", tmp_path / "cap", cwd=tmp_path).stdout)
    assert analysed["cause"] == "fragmentation" and analysed["measured"].startswith("Revised by measurement")
