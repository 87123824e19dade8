"""`vramlens experiment` end to end on a real GPU: an allocator setting that cures a fragmentation
OOM, a checkerboard that no setting cures, and the largest batch size under a memory limit.

With VRAMLENS_EXPERIMENT_RECORD=DIR each experiment's JSON is also written to DIR: that is how
tests/fixtures/experiments/ was recorded (the CPU tests check the comparison logic on it).
"""

import json
import os
import shutil

import pytest

pytestmark = pytest.mark.gpu
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCENARIOS = os.path.join(ROOT, "scenarios")


def experiment(vramlens, tmp_path, name, *options, script):
    run = vramlens("experiment", "--json", "-o", tmp_path / name, *options, os.path.join(SCENARIOS, script), timeout=400)
    record = os.environ.get("VRAMLENS_EXPERIMENT_RECORD")
    if record and os.path.exists(tmp_path / name / "experiment.json"):
        os.makedirs(record, exist_ok=True)
        shutil.copy(tmp_path / name / "experiment.json", os.path.join(record, f"{name}.json"))
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def by_label(data, fragment):
    return next(variant for variant in data["variants"] if fragment in variant["label"])


def test_an_allocator_setting_cures_the_fragmentation_oom(vramlens, tmp_path):
    data = experiment(vramlens, tmp_path, "fragmentation", "--memory-limit", "1600MiB",
                      "--variant", "expandable_segments:True", "--variant", "max_split_size_mb:128",
                      "--variant", "garbage_collection_threshold:0.6", script="fragmentation.py")
    baseline, expandable = data["variants"][0], by_label(data, "expandable_segments")
    for variant in data["variants"]:
        print(variant["label"], variant["ooms"], variant["verdict"])
    assert baseline["ooms"] == 3 and baseline["fragmentation_at_oom"]["median"] >= 0.4
    assert baseline["summary"]["driver_peak"]["median"] >= baseline["summary"]["peak_reserved"]["median"]
    assert expandable["ooms"] == 0
    oom = expandable["differences"][0]
    assert oom["metric"] == "oom" and oom["real"]
    chosen = data["chosen"]
    assert chosen and data["variants"][chosen["index"]]["ooms"] == 0
    report = vramlens("report", baseline["runs"][0]["capture"])
    assert report.returncode == 0, report.stderr
    assert "## Chosen intervention" in report.stdout and chosen["label"] in report.stdout


def test_no_allocator_setting_cures_the_checkerboard(vramlens, tmp_path):
    data = experiment(vramlens, tmp_path, "checkerboard", "--memory-limit", "1280MiB",
                      "--variant", "expandable_segments:True", script="checkerboard.py")
    baseline, expandable = data["variants"]
    print(baseline["verdict"], "|", expandable["verdict"])
    assert baseline["ooms"] == 3 and expandable["ooms"] == 3
    assert not expandable["differences"][0]["real"]
    assert baseline["fragmentation_at_oom"]["median"] >= 0.4  # it is fragmentation, just not curable by the setting
    assert data["chosen"] is None
    analysis = vramlens("analyze", "--json", baseline["runs"][0]["capture"])
    print("checkerboard cause:", json.loads(analysis.stdout)["cause"])


def test_largest_batch_size_under_a_memory_limit(vramlens, tmp_path):
    data = experiment(vramlens, tmp_path, "batch_size", "--find-max", "batch-size", "--limit", "1GiB",
                      "--lo", "1024", "--step", "1024", script="batch_size.py")
    search = data["search"]
    for probe in search["probes"]:
        print(probe["value"], probe["fits"], probe["peak_allocated"], probe["peak_reserved"])
    print(search["fit"])
    assert search["outcome"] == "found"
    assert search["smallest_failure"] == search["largest_fit"] + 1024
    fit = search["fit"]["peak_reserved"]
    assert fit["slope_bytes_per_unit"] > 0 and fit["r_squared"] >= 0.98
    margin = max(2048, 0.15 * search["largest_fit"])  # the line agrees with the bisection within a few steps
    assert search["largest_fit"] - margin <= fit["predicted_max"] <= search["smallest_failure"] + margin
    assert data["chosen"]["label"] == f"--batch-size {search['largest_fit']}"
