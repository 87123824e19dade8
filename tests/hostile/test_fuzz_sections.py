"""A bounded fuzz of the files and sections added since the snapshot's own (fixed seeds, fixed counts):
mutations of REAL census.json, experiment.json and capture.json notebook sections, generated
Markdown-hostile strings, and notebook sync edits through the real language server.

A census or notebook problem must cost only itself: the snapshot is still analysed, never refused by
the analysis' last net; every text that leaves (the analysis text, the JSON, the report) is written
without error, the JSON is valid JSON (no NaN), and the report's Markdown holds no live link.
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import sys
from pathlib import Path

import pytest

from markdown_oracle import live_links
from test_fuzz import LAST_NET, SEED, containers, outcome
from vramlens.analysis import to_json
from vramlens.analysis.pipeline import analyze_capture
from vramlens.analysis.rendering.markdown_safe import code, prose, sentence
from vramlens.analysis.rendering.report import build_report
from vramlens.capture import CaptureError, load_capture
from vramlens.analysis.rendering.analysis_text import render_text
from vramlens.lsp.loading import read_experiment

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "tests" / "fixtures" / "captures"
CENSUS_CAPTURES = [CAPTURES / "notebook_kept_outputs", CAPTURES / "sample"]
EXPERIMENTS = [path for path in sorted((ROOT / "tests" / "fixtures" / "realworld").glob("*/experiment.json"))
               if json.loads(path.read_text()).get("schema") == "vramlens-experiment"][:4]
LINK = "[click](https://evil.example/)"
JSON_STRANGE = [10**400, -10**400, -1, 2**64, float("nan"), float("inf"), 1e308, "\ud800", "\udcff.py", "", "x" * 100_000,
                f"a`{LINK}`b", f"``{LINK}", "<https://evil.example/>", "line\nCause: fake", None, True, [], {}, [[[[]]]],
                {"zz_unknown": "y" * 1000}, 0.5, "NaN"]


def mutate_json(value, rng: random.Random, count: int):
    value = json.loads(json.dumps(value))
    places = list(containers(value))
    for _ in range(count):
        _, container = rng.choice(places)
        if not container:
            continue
        strange = rng.choice(JSON_STRANGE)
        if isinstance(container, dict):
            key = rng.choice(list(container))
            if rng.random() < 0.15:
                del container[key]
            else:
                container[key] = strange
        else:
            container[rng.randrange(len(container))] = strange
    return value


def full_outcome(capture_dir: Path, where: str) -> str:
    kind = outcome(lambda: load_capture(capture_dir), where)
    if kind == "result":
        capture = load_capture(capture_dir)
        analysis = analyze_capture(capture)
        text = render_text(analysis, "fuzz")
        text.encode("utf-8")  # the CLI writes it with escapes; the text itself must be safe already
        json.dumps(to_json(analysis), allow_nan=False)
        report = build_report(analysis, capture.meta, None, "fuzz")
        report.encode("utf-8")
        assert not live_links(report), f"{where}: a live link in the report: {live_links(report)[:2]}"
    return kind


@pytest.mark.parametrize("folder", CENSUS_CAPTURES, ids=lambda path: path.name)
def test_census_mutations_cost_only_the_census(tmp_path, folder):
    rng = random.Random(f"{SEED}:census:{folder.name}")
    census = json.loads((folder / "census.json").read_text())
    for number in range(25):
        target = tmp_path / f"c{number}"
        shutil.copytree(folder, target)
        (target / "census.json").write_text(json.dumps(mutate_json(census, rng, rng.randint(1, 5))))
        assert full_outcome(target, f"{folder.name} census mutation {number}") == "result"  # the snapshot still stands


def test_notebook_section_mutations_are_read_or_said(tmp_path):
    folder = CAPTURES / "notebook_kept_outputs"
    rng = random.Random(f"{SEED}:notebook-section")
    meta = json.loads((folder / "capture.json").read_text())
    kinds = []
    for number in range(30):
        target = tmp_path / f"n{number}"
        shutil.copytree(folder, target)
        changed = dict(meta, notebook=mutate_json(meta["notebook"], rng, rng.randint(1, 6)))
        (target / "capture.json").write_text(json.dumps(changed))
        kinds.append(full_outcome(target, f"notebook section mutation {number}"))
    assert "result" in kinds


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda path: path.parent.name)
def test_experiment_mutations_are_read_or_one_sentence(tmp_path, path):
    rng = random.Random(f"{SEED}:experiment:{path.parent.name}")
    original = json.loads(path.read_text())
    kinds = []
    for number in range(30):
        target = tmp_path / f"e{number}.json"
        target.write_text(json.dumps(mutate_json(original, rng, rng.randint(1, 6))))
        try:
            data = read_experiment(target)
        except CaptureError as error:
            assert "\n" not in str(error) and len(str(error)) < 600, str(error)
            kinds.append("refused")
            continue
        text = json.dumps(data, allow_nan=False)  # valid JSON for the editor: no NaN, no Infinity
        assert "zz_unknown" not in text and len(text) < 2 * len(path.read_text()) + 200_000
        from vramlens.analysis.rendering.experiment_text import render_text as experiment_text

        shown = experiment_text(data)
        assert "\nCause: fake" not in shown and "\ud800" not in shown
        kinds.append("read")
    assert "read" in kinds


def _hostile_string(rng: random.Random) -> str:
    parts = ["`" * rng.randint(1, 5), "[", "]", "(", ")", "<", ">", "\\", "!", "https://evil.example/", "click", " ",
             "|", "*", "_", "\n", "\ud800", "\x1b[2J", "<script>"]
    return "".join(rng.choice(parts) for _ in range(rng.randint(1, 30)))


def test_generated_strings_never_make_a_live_link_or_leave_their_line():
    rng = random.Random(f"{SEED}:markdown")
    for _ in range(3000):
        text = _hostile_string(rng)
        for shown in (code(text), prose(text), sentence(text), f"see {code(text)} and {prose(text)}"):
            assert not live_links(shown), (text, shown)
            assert "\n" not in shown
            shown.encode("utf-8")
        if text.strip("` \n") and "`" not in text:
            assert code(text).strip("`").strip() == text.strip(" ").replace("\n", "\\n") or "\\" in code(text)


def test_a_big_integer_in_census_times_is_not_the_last_net(tmp_path):
    target = tmp_path / "c"
    shutil.copytree(CAPTURES / "notebook_kept_outputs", target)
    census = json.loads((target / "census.json").read_text())
    census.update(epoch=10**400, duration_s=10**309, budget_s=-1)
    (target / "census.json").write_text(json.dumps(census))
    capture = load_capture(target)
    assert capture.census is None
    (note,) = [note for note in capture.notes if "census.json" in note]
    assert "not a valid census" in note and LAST_NET not in note


def test_a_census_not_of_this_snapshot_is_not_trusted(tmp_path):
    target = tmp_path / "c"
    shutil.copytree(CAPTURES / "notebook_kept_outputs", target)
    census = json.loads((target / "census.json").read_text())
    for storage in census["storages"]:
        storage["bytes"] *= 8000  # terabytes held by a run that never had 3 GiB live
    (target / "census.json").write_text(json.dumps(census))
    analysis = analyze_capture(load_capture(target))
    assert any("not of this run" in note for note in analysis.notes)
    assert not analysis.holders and not analysis.roles


def test_a_missing_census_still_analyses_the_snapshot_and_says_so(tmp_path):
    target = tmp_path / "c"
    shutil.copytree(CAPTURES / "notebook_kept_outputs", target)
    (target / "census.json").unlink()
    analysis = analyze_capture(load_capture(target))
    assert analysis.diagnosis.cause == "working_set"
    assert any("census.json" in note and "analysed without it" in note for note in analysis.notes)


def test_sizes_out_of_range_in_the_notebook_section_read_as_unknown(tmp_path):
    target = tmp_path / "c"
    shutil.copytree(CAPTURES / "notebook_kept_outputs", target)
    meta = json.loads((target / "capture.json").read_text())
    meta["notebook"]["cells"][2].update(allocated_after=10**400, allocated_before=-(2**40))
    (target / "capture.json").write_text(json.dumps(meta))
    capture = load_capture(target)
    assert any("notebook.cells[2].allocated_after" in note for note in capture.notes)
    analysis = analyze_capture(capture)
    report = build_report(analysis, capture.meta, None, "t")
    assert "-1024" not in report and "e+" not in render_text(analysis, "t")
