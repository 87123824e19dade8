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


KEEPS_EVERY_STEP = (
    "import torch\n"
    "MiB = 1 << 20\n"
    "kept = []\n"
    "for step in range(40):\n"
    "    x = torch.randn(64 * MiB // 4, device='cuda')\n"
    "    y = x * 2\n"
    "    kept.append(y)\n"
    "    print(f'[progress] step {step + 1} done', flush=True)\n"
    "print('kept', len(kept))\n"
)


def test_run_confirm_measures_the_storing_lines_fix_and_puts_it_first(vramlens, tmp_path):
    # 40 steps keep 64 MiB each on the GPU under a 1 GiB cap: the storing line's proven edit
    # (`.detach().cpu()`, the list only counted) is run as one more variant, in the process only
    script = tmp_path / "keep.py"
    script.write_text(KEEPS_EVERY_STEP)
    run = vramlens("run", "--confirm", "-o", tmp_path / "cap", "--memory-limit", "1GiB", str(script), timeout=400)
    assert "and measuring the fix at keep.py:7: `kept.append(y.detach().cpu())`" in run.stderr, run.stderr
    assert script.read_text() == KEEPS_EVERY_STEP  # the file itself untouched
    meta = json.loads((tmp_path / "cap" / "capture.json").read_text())
    rows = meta["confirmation"]["table"]
    edit = next(row for row in rows if row.get("edit"))
    assert rows[0]["ooms"] == 1 and edit["ooms"] == 0
    assert edit["edit"]["after"] == "    kept.append(y.detach().cpu())"
    edited = json.loads((tmp_path / "cap--confirm" / "edit-keep-py-7" / "run-1" / "capture.json").read_text())
    assert edited["status"] == "completed" and edited["source_edit"]["line"] == 7
    analysed = vramlens("analyze", tmp_path / "cap")
    assert "First fix: Change keep.py:7 to `kept.append(y.detach().cpu())`: measured on this script" in analysed.stdout
