"""The storing line's fix measured on the GPU (tests/fixtures/measured_fix): the advice's first fix is the
edit the confirming run executed, linked to the storing line, and `vramlens diff` of the two runs shows it."""

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from vramlens.analysis import analyze_path

REPO = Path(__file__).resolve().parents[1]
BUNDLE = REPO / "tests" / "fixtures" / "measured_fix" / "module_history_attr.tar.xz"
SCRIPTS = REPO / "workloads" / "retention"  # the recorded folder's script, as it is here


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("measured")
    with tarfile.open(BUNDLE) as bundle:
        bundle.extractall(folder, filter="data")
    return folder / "mh"


def test_the_measured_edit_is_the_first_fix_and_opens_the_storing_line(runs):
    analysis = analyze_path(runs / "capture", source_root=str(SCRIPTS))
    assert analysis.storing[0].line == 29
    first = analysis.recommendations[0]
    assert first.action.startswith("Change module_history.py:29 to `self.history += [h.detach().cpu()]`: measured on "
                                   "this script, the run with it ran without an OOM")
    assert [(a.kind, a.arguments["line"]) for a in first.actions] == [("open_line", 29)]
    assert first.command.startswith("vramlens diff ") and "edit-module-history-py-29" in first.command
    # the generic "stop it keeping" advice for the same line comes after the measured one
    later = [r.action for r in analysis.recommendations[1:]]
    assert any(text.startswith("Stop model.history from keeping") for text in later)


def test_the_run_with_the_edit_is_of_the_edited_program_and_fits(runs):
    meta = json.loads((runs / "capture--confirm" / "edit-module-history-py-29" / "run-1" / "capture.json").read_text())
    assert meta["source_edit"]["after"].strip() == "self.history += [h.detach().cpu()]"
    assert meta["status"] == "completed"


def test_the_diff_of_baseline_and_edit_shows_the_growth_removed(runs):
    before = runs / "capture--confirm" / "baseline" / "run-1"
    after = runs / "capture--confirm" / "edit-module-history-py-29" / "run-1"
    out = subprocess.run([sys.executable, "-m", "vramlens", "diff", "--json", str(before), str(after),
                          "--source-root", str(SCRIPTS)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["before"]["outcome"], data["after"]["outcome"]) == ("oom", "completed")
    assert data["before"]["growth"] > 2 * 2**30 and data["after"]["growth"] == 0
    assert data["sentence"].startswith("The change removed 2.87 GiB of growth across steps (kept at module_history.py:29")
    assert data["sentence"].endswith("the run now completes.")


def test_without_the_measured_row_the_inferred_advice_comes_first(runs, tmp_path):
    # the same capture, its confirmation's edit row left out: the first fix is no longer a measured edit
    folder = tmp_path / "capture"
    folder.mkdir()
    for item in (runs / "capture").iterdir():
        (folder / item.name).write_bytes(item.read_bytes())
    meta = json.loads((folder / "capture.json").read_text())
    meta["confirmation"]["table"] = [row for row in meta["confirmation"]["table"] if not row.get("edit")]
    (folder / "capture.json").write_text(json.dumps(meta))
    analysis = analyze_path(folder, source_root=str(SCRIPTS))
    assert not any(r.action.startswith("Change module_history.py:29") for r in analysis.recommendations)
