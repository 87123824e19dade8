"""The recording driver end to end on the stand-in torch: calibration, confirming runs, captures,
ground truth, packing (at most 8 files, each small) and unpacking into fixture folders with a README.

The stand-in (workloads/dryrun/standin_workload.py) imitates memory behaviour on a pretend device;
this proves the orchestration and the file layout, not any diagnosis.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ONLY = ["hf_trainer_first_step", "lightning_val_outputs", "hf_trainer_eval_accumulate", "dynamic_padding_fragmentation"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "server"))
    done = subprocess.run([sys.executable, str(ROOT / "workloads" / "record.py"), str(out), "--dry-run",
                           "--run-guess-s", "3", "--only", *ONLY],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    fixtures = tmp_path_factory.mktemp("fixtures")
    subprocess.run([sys.executable, str(ROOT / "workloads" / "unpack.py"), str(out), "--dest", str(fixtures)],
                   check=True, capture_output=True, timeout=60)
    return out, fixtures


def test_out_holds_at_most_eight_small_files_with_plain_names(recorded):
    out, _ = recorded
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8 and {"log.txt", "summary.json", "captures-1.tar"} <= set(files)
    assert all(p.stat().st_size <= 16 * 2**20 and p.is_file() for p in out.iterdir())
    assert sum(p.stat().st_size for p in out.iterdir()) <= 64 * 2**20
    assert all(set(name) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") for name in files)


def test_every_workload_becomes_a_fixture_with_its_capture_and_ground_truth(recorded):
    _, fixtures = recorded
    for name in ONLY:
        folder = fixtures / name
        meta = json.loads((folder / "capture" / "capture.json").read_text())
        assert meta["format"] == "vramlens-capture" and (folder / "capture" / "snapshot.pickle").is_file()
        assert json.loads((folder / "ground_truth.json").read_text())["workload"] == name
    assert (fixtures / "hf_trainer_first_step" / "experiment.json").is_file()
    assert not (fixtures / "hf_trainer_eval_accumulate" / "experiment.json").exists()  # a completed counter-case


def test_captures_are_recorded_from_the_neutral_folder(recorded):
    _, fixtures = recorded
    meta = json.loads((fixtures / "hf_trainer_first_step" / "capture" / "capture.json").read_text())
    assert "workloads" not in meta["script"] and str(ROOT) not in meta["cwd"]
    assert meta["script"].endswith("/hf_trainer/train_first_step.py")


def test_the_cap_is_calibrated_so_the_case_fails_and_the_halved_batch_fits(recorded):
    _, fixtures = recorded
    truth = json.loads((fixtures / "hf_trainer_first_step" / "ground_truth.json").read_text())
    assert truth["recorded"]["memory_limit"] and truth["measured"]["oom"]
    assert {run["role"]: run["outcome"] for run in truth["confirming_runs"]}["scale_halved"] == "completed"
    assert (truth["cause"], truth["rule"]) == ("working_set", "R4")
    counter = json.loads((fixtures / "hf_trainer_eval_accumulate" / "ground_truth.json").read_text())
    case = json.loads((fixtures / "hf_trainer_eval_gather" / "ground_truth.json").read_text())
    assert counter["recorded"]["memory_limit"] == case["recorded"]["memory_limit"]


def test_the_fragmentation_ladder_keeps_a_cap_that_runs_out(recorded):
    _, fixtures = recorded
    truth = json.loads((fixtures / "dynamic_padding_fragmentation" / "ground_truth.json").read_text())
    assert any(label.startswith("cap ") and run["oom"] for label, run in truth["calibration"]["runs"])
    assert (truth["cause"], truth["rule"]) == ("fragmentation", "R2")


def test_ground_truth_recomputes_from_the_fixture_files(recorded):
    _, fixtures = recorded
    for name in ONLY:
        done = subprocess.run([sys.executable, str(ROOT / "workloads" / "ground_truth.py"), str(fixtures / name), "--check"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_readme_lists_every_fixture_with_its_measured_cause(recorded):
    _, fixtures = recorded
    text = (fixtures / "README.md").read_text()
    for name in ONLY:
        assert f"`{name}`" in text
    assert "**working_set (one step)** [R4]" in text
