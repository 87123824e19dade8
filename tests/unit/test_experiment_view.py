"""An experiment's rows and notes as the report view and `vramlens experiment` show them, on the committed
experiments measured on an H200 (tests/fixtures/experiments/README.md)."""

import json
import re
from pathlib import Path

from vramlens.analysis.rendering.experiment_text import render_text
from vramlens.analysis.rendering.experiment_view import COLUMNS, experiment_json, experiment_notes, experiment_rows

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "experiments"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def test_one_row_per_variant_medians_with_their_spread_in_the_column_order():
    data = fixture("fragmentation")
    rows = experiment_rows(data)
    assert len(rows) == len(data["variants"])
    assert all(len(row["cells"]) == len(COLUMNS) for row in rows)
    assert [row["cells"][0] for row in rows] == ["baseline", "expandable_segments:True", "max_split_size_mb:128",
                                                  "garbage_collection_threshold:0.6"]
    assert [v["label"] for v in data["variants"]][1:2] == ["PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"]
    assert [row["cells"][1] for row in rows] == ["3/3", "0/3", "0/3", "3/3"]
    assert rows[0]["cells"][5] == "50%"  # equal min and max: the median alone
    assert re.match(r"^\d+\.\d\d s \(\d+\.\d\d s–\d+\.\d\d s\)$", rows[0]["cells"][6])
    assert rows[1]["cells"][5] == "—"  # no OOM, no fragmentation at one
    assert rows[1]["cells"][7] == data["variants"][1]["verdict"]


def test_differences_are_split_into_beyond_and_within_the_noise_as_judged():
    data = fixture("fragmentation")
    baseline, expandable, _, threshold = experiment_rows(data)
    assert baseline["beyondNoise"] == [] and baseline["withinNoise"] == []
    assert "OOM: prevented the OOM (OOM in 0/3 runs against 3/3)" in expandable["beyondNoise"]
    assert any(t.startswith("peak reserved: +4.00 MiB (+0%): within noise") for t in expandable["withinNoise"])
    assert [t for t in threshold["beyondNoise"] if not t.startswith("run time")] == []  # changed nothing beyond noise
    real = sum(1 for v in data["variants"] for d in v["differences"] if d["real"] and d["change"] is not None)
    assert sum(len(row["beyondNoise"]) for row in experiment_rows(data)) == real


def test_notes_say_the_choice_as_the_cli_does_and_a_search_and_its_fit():
    for name in ("fragmentation", "checkerboard", "batch_size"):
        data = fixture(name)
        chosen = next(line for line in render_text(data).splitlines() if line.startswith("Chosen intervention:"))
        assert experiment_notes(data)[-1 if not data["stopped"] else -2] == chosen  # one sentence, two renderers
    assert experiment_notes(fixture("fragmentation"))[-1].startswith(
        "Chosen intervention: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: prevented the OOM (OOM in 0/3 runs against 3/3)")
    assert "Chosen intervention: none — no variant beat the baseline beyond the run-to-run noise." in experiment_notes(fixture("checkerboard"))
    search = experiment_notes(fixture("batch_size"))
    assert any(t.startswith("Largest --batch-size under 1GiB: 10240 (found; tried 1024 fits, 2048 fits") for t in search), search
    assert any(re.match(r"^peak reserved ≈ 230\.80 MiB \+ 76\.00 KiB per unit \(R² 0\.998; meets the limit at 10687\)\.$", t)
               for t in search), search
    assert experiment_rows(fixture("batch_size")) == []


def test_the_view_gets_labels_only():
    view = experiment_json(fixture("fragmentation"))
    assert view["title"].startswith("Controlled experiment — ") and view["title"].endswith("(3 runs per variant)")
    assert view["columns"] == COLUMNS and view["legend"] == {"beyond": "beyond the run-to-run noise", "within": "within noise"}
    assert experiment_json(None) is None
