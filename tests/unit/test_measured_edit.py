"""The storing line's fix measured before the user applies it: an experiment's variant runs the script with
one line changed inside the recorded process (agent/source_edit.py), the file on disk untouched. Real
processes through the runner and the agent, on the stand-in torch of tests/agent_double (a pretend 8 GiB
device whose memory limit fails allocations exactly)."""

import json
import subprocess
import sys
from pathlib import Path

from test_run_process import DOUBLE, ROOT, vramlens, write

from vramlens.analysis.experiments.variants import BASELINE, SourceEdit, Variant
from vramlens.experiments.engine import ExperimentPlan, run_experiment
from vramlens.runner.launch import RunOptions

import os

KEEP = (
    "import torch\n"
    "from helper import remember\n"
    "MiB = 1024 * 1024\n"
    "kept = []\n"
    "for step in range(40):\n"
    "    out = torch.empty(40 * MiB)\n"
    "    kept.append(out)\n"
    "    remember(out)\n"
    "print('kept', len(kept))\n"
)
HELPER = (
    "import torch\n"
    "seen = []\n"
    "def remember(tensor):\n"
    "    seen.append(tensor)\n"
)
ENV = {"PYTHONPATH": os.pathsep.join([DOUBLE, os.path.join(ROOT, "server")])}


def _experiment(tmp_path: Path, *edits: SourceEdit) -> dict:
    script = tmp_path / "keep.py"
    options = RunOptions(script=script, cwd=tmp_path, extra_env=ENV, memory_limit_text="1GiB")
    return run_experiment(ExperimentPlan(
        script=script, variants=[BASELINE] + [Variant("edit", edit=edit) for edit in edits], repeats=1,
        memory_limit="1GiB", run=options, output_dir=tmp_path / "exp"))


def test_an_edited_line_of_an_imported_module_is_what_the_run_executes_and_leaves_no_trace(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # as on a user's machine: bytecode is cached
    write(tmp_path, "keep.py", KEEP.replace("    kept.append(out)\n", "    pass\n"))
    write(tmp_path, "helper.py", HELPER)
    before = {name: (tmp_path / name).read_bytes() for name in ("keep.py", "helper.py")}
    fix = SourceEdit(str(tmp_path / "helper.py"), 4, "    seen.append(tensor)", "    seen.append(tensor.shape)")
    data = _experiment(tmp_path, fix)
    assert data["stopped"] is None, data["stopped"]
    assert [v["label"] for v in data["variants"]] == ["baseline", "seen.append(tensor.shape) at helper.py:4"]
    assert [v["ooms"] for v in data["variants"]] == [1, 0]  # 40 × 40 MiB kept by the helper; none with the fix
    assert data["variants"][1]["edit"] == fix.to_json()
    meta = json.loads(Path(data["variants"][1]["runs"][0]["capture"], "capture.json").read_text())
    assert meta["source_edit"] == fix.to_json()  # the capture says which program it is of
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    # no bytecode of the edited text was cached: the user's next plain run imports the file as it is
    plain = subprocess.run([sys.executable, "-c", "import helper; helper.remember(7); print(helper.seen)"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert plain.stdout.strip() == "[7]", plain.stderr


def test_both_stores_fixed_fit_and_the_run_prints_what_it_kept(tmp_path):
    write(tmp_path, "keep.py", KEEP.replace("from helper import remember", "import os").replace("    remember(out)\n", ""))
    fix = SourceEdit(str(tmp_path / "keep.py"), 7, "    kept.append(out)", "    kept.append(out.shape)")
    data = _experiment(tmp_path, fix)
    assert [v["ooms"] for v in data["variants"]] == [1, 0]
    log = (tmp_path / "exp" / Variant("edit", edit=fix).slug / "run-1.log").read_text()
    assert "kept 40" in log  # the program ran to its end, with its own output


def test_a_line_changed_since_the_capture_is_refused_before_the_run(tmp_path):
    write(tmp_path, "keep.py", KEEP.replace("from helper import remember", "import os").replace("    remember(out)\n", ""))
    stale = SourceEdit(str(tmp_path / "keep.py"), 7, "    kept.append(out.clone())", "    kept.append(out.shape)")
    data = _experiment(tmp_path, stale)
    assert data["stopped"] and "no longer applies: line 7" in data["stopped"]
    assert len(data["variants"]) == 1  # the baseline alone: nothing was passed off as the fix
