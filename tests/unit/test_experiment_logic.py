"""The comparison, noise and bisection logic of `vramlens experiment`, on the tables measured on the
GPU (tests/fixtures/experiments/, recorded by tests/gpu/test_experiments.py) and on small cases."""

import json
import os
import shutil

import pytest

from vramlens.analysis.experiments.comparison import compare_metric, compare_oom, noise_of, spread, summarize, summarize_all
from vramlens.analysis.experiments.experiment import chosen_sentence, experiment_json, record_from_json
from vramlens.analysis.experiments.find_max import MaxSearch, fit_line
from vramlens.analysis.experiments.measurement import RunMeasurement, measure
from vramlens.analysis.experiments.variants import BASELINE, Variant, parse_variant, parse_variants, with_argument
from vramlens.cli import main
from vramlens.analysis.rendering.experiment_text import render_text
from vramlens.experiments.engine import note_in_capture

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "experiments")
CAPTURES = os.path.join(ROOT, "tests", "fixtures", "captures")
MIB = 1024 * 1024


def recorded(name):
    with open(os.path.join(FIXTURES, f"{name}.json")) as handle:
        return json.load(handle)


def variant(data, fragment):
    return next(item for item in data["variants"] if fragment in item["label"])


def run(oom=False, reserved=1000 * MIB, allocated=None, seconds=5.0):
    return RunMeasurement("oom" if oom else "completed", 1 if oom else 0, oom, allocated or reserved, reserved, None,
                          None, None, seconds)


# --- the recorded GPU tables -------------------------------------------------------------

@pytest.mark.parametrize("name", ["fragmentation", "checkerboard", "batch_size"])
def test_the_recorded_tables_are_what_the_logic_computes_from_their_runs(name):
    data = recorded(name)
    again = experiment_json(record_from_json(data))
    for key in ("variants", "chosen", "search", "noise"):
        assert again[key] == data[key], key


def test_fragmentation_two_settings_prevent_the_oom_and_one_does_not():
    data = recorded("fragmentation")
    baseline = data["variants"][0]
    assert baseline["ooms"] == 3 and baseline["fragmentation_at_oom"]["median"] == pytest.approx(0.5)
    for fragment in ("expandable_segments", "max_split_size_mb"):
        oom = variant(data, fragment)["differences"][0]
        assert oom["real"] and oom["text"].startswith("prevented the OOM (OOM in 0/3 runs against 3/3)")
    gc = variant(data, "garbage_collection_threshold")
    assert not gc["differences"][0]["real"] and gc["verdict"].startswith("same outcome")
    assert not any(d["real"] for d in gc["differences"] if d["metric"] != "duration_s")
    # Both cures fit; expandable segments did so with the lower median peak reserved.
    assert data["chosen"]["label"] == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"


def test_a_small_change_is_within_noise_and_a_larger_one_is_real():
    data = recorded("fragmentation")
    expandable = {d["metric"]: d for d in variant(data, "expandable_segments")["differences"]}
    max_split = {d["metric"]: d for d in variant(data, "max_split_size_mb")["differences"]}
    assert expandable["peak_reserved"]["change"] == 4 * MIB and not expandable["peak_reserved"]["real"]
    assert max_split["peak_reserved"]["change"] == 48 * MIB and max_split["peak_reserved"]["real"]
    # The noise is the rule of docs/experiments.md: the larger range, at least 1% of the larger median.
    base = data["variants"][0]["summary"]["peak_reserved"]
    other = variant(data, "max_split_size_mb")["summary"]["peak_reserved"]
    ranges = (base["max"] - base["min"], other["max"] - other["min"])
    assert max_split["peak_reserved"]["noise"] == max(*ranges, 0.01 * max(base["median"], other["median"]), 2 * MIB)


def test_checkerboard_no_setting_moves_anything_beyond_noise():
    data = recorded("checkerboard")
    baseline, expandable = data["variants"]
    assert baseline["ooms"] == expandable["ooms"] == 3
    assert baseline["fragmentation_at_oom"]["median"] == pytest.approx(0.5)
    memory = [d for d in expandable["differences"] if d["metric"] not in ("oom", "duration_s")]
    assert memory and not any(d["real"] for d in memory)
    assert data["chosen"] is None
    assert "Chosen intervention: none" in render_text(data)


def test_the_recorded_search_replays_to_the_same_runs():
    search = recorded("batch_size")["search"]
    fits = {probe["value"]: probe["fits"] for probe in search["probes"]}
    replay = MaxSearch(search["lo"], search["hi"], search["step"])
    order = []
    while (value := replay.next_value()) is not None:
        order.append(value)
        replay.record(value, fits[value])
    assert order == [probe["value"] for probe in search["probes"]]
    assert (replay.largest_fit, replay.smallest_failure, replay.outcome) == (10240, 11264, "found")


def test_the_recorded_slope_per_sample_and_its_fit():
    data = recorded("batch_size")
    fit = data["search"]["fit"]["peak_reserved"]
    assert fit["points"] == 5 and fit["r_squared"] > 0.99
    assert 60 * 1024 < fit["slope_bytes_per_unit"] < 100 * 1024  # tens of KiB of activations per sample
    # The line agrees with the bisection: it crosses the limit between the last fit and the first failure.
    assert data["search"]["largest_fit"] <= fit["predicted_max"] < data["search"]["smallest_failure"]
    assert "76.00 KiB per unit (R² 0.998)" in chosen_sentence(data)


# --- the rules on small cases ------------------------------------------------------------

def test_noise_is_the_larger_range_with_floors():
    wide, narrow = spread([100 * MIB, 110 * MIB, 104 * MIB]), spread([120 * MIB] * 3)
    assert noise_of("peak_reserved", wide, narrow) == 10 * MIB
    assert noise_of("peak_reserved", spread([10 * MIB]), spread([11 * MIB])) == 2 * MIB  # single runs: the floor
    assert noise_of("duration_s", spread([10.0]), spread([10.5])) == pytest.approx(1.05)
    assert compare_metric("peak_reserved", wide, narrow).real  # +16 MiB against ±10 MiB
    assert not compare_metric("peak_reserved", wide, spread([112 * MIB] * 3)).real
    assert compare_metric("driver_peak", None, narrow).text == "not measured in both"


def test_oom_outcomes_are_real_only_when_each_side_is_consistent():
    always = summarize(BASELINE, [run(oom=True)] * 3)
    never = summarize(BASELINE, [run()] * 3)
    sometimes = summarize(BASELINE, [run(oom=True), run(), run(oom=True)])
    assert compare_oom(always, never).real and compare_oom(always, never).text.startswith("prevented")
    assert compare_oom(never, always).real and compare_oom(never, always).text.startswith("caused an OOM")
    assert not compare_oom(always, sometimes).real and compare_oom(always, sometimes).text.startswith("flaky")
    assert not compare_oom(always, always).real


def test_without_an_oom_the_choice_is_a_real_drop_in_peak_reserved():
    lower, same = Variant("allocator", alloc_conf="expandable_segments:True"), Variant("allocator", alloc_conf="max_split_size_mb:64")
    summaries = summarize_all([(BASELINE, [run(reserved=r * MIB) for r in (1000, 1004, 1002)]),
                               (same, [run(reserved=r * MIB) for r in (1001, 999, 1003)]),
                               (lower, [run(reserved=r * MIB) for r in (800, 805, 801)])])
    data = experiment_json(record_from_json({"variants": [
        {"kind": s.variant.kind, "alloc_conf": s.variant.alloc_conf, "runs": [r.to_json() for r in s.runs]} for s in summaries]}))
    assert data["chosen"]["label"] == lower.label
    assert "peak reserved -" in data["variants"][2]["verdict"]
    assert data["variants"][1]["verdict"].endswith("no memory figure moved beyond noise")


def test_search_doubles_then_bisects_on_the_grid():
    search, tried = MaxSearch(lo=8, step=8), []
    while (value := search.next_value()) is not None:
        tried.append(value)
        search.record(value, value * 10 <= 960)
    assert tried == [8, 16, 32, 64, 128, 96, 112, 104]
    assert (search.largest_fit, search.smallest_failure) == (96, 104)


def test_search_with_bounds_and_its_other_outcomes():
    bounded, tried = MaxSearch(lo=1, hi=100), []
    while (value := bounded.next_value()) is not None:
        tried.append(value)
        bounded.record(value, value <= 37)
    assert tried[:2] == [1, 100] and bounded.largest_fit == 37 and len(tried) <= 10
    too_big = MaxSearch(lo=4)
    too_big.record(4, False)
    assert too_big.next_value() is None and too_big.outcome == "lo_fails"
    roomy = MaxSearch(lo=1, hi=16)
    roomy.record(1, True)
    roomy.record(16, True)
    assert roomy.next_value() is None and roomy.outcome == "upper_bound_fits"
    with pytest.raises(ValueError):
        MaxSearch(lo=8, hi=4)


def test_least_squares_fit():
    exact = fit_line([(1, 12), (2, 22), (4, 42)])
    assert (exact.slope, exact.intercept, exact.r_squared) == (pytest.approx(10), pytest.approx(2), pytest.approx(1))
    assert exact.solve(102) == pytest.approx(10)
    assert fit_line([(1, 5), (3, 9)]).r_squared is None  # two points: a line always fits them
    assert fit_line([(2, 5), (2, 9)]) is None
    noisy = fit_line([(1, 10), (2, 25), (3, 28), (4, 41)])
    assert 0.8 < noisy.r_squared < 1


# --- variants, measurements, report ------------------------------------------------------

def test_variant_specs():
    assert parse_variant("expandable_segments:True") == [Variant("allocator", alloc_conf="expandable_segments:True")]
    assert parse_variant("memory-limit=24GiB")[0].label == "memory limit 24GiB"
    assert [v.label for v in parse_variant("--batch-size=8,16,32")] == ["--batch-size 8", "--batch-size 16", "--batch-size 32"]
    assert [v.label for v in parse_variants(["max_split_size_mb:128", "max_split_size_mb:128"])] == [
        "baseline", "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128"]
    for bad in ("expandable:True", "--batch-size", "batch-size=8"):
        with pytest.raises(ValueError):
            parse_variant(bad)


def test_an_argument_value_replaces_or_is_added():
    assert with_argument(["--batch-size", "64", "--lr", "1"], "--batch-size", "8") == ["--batch-size", "8", "--lr", "1"]
    assert with_argument(["--batch-size=64"], "--batch-size", "8") == ["--batch-size=8"]
    assert with_argument(["--lr", "1"], "--batch-size", "8") == ["--lr", "1", "--batch-size", "8"]


def test_measurement_from_a_real_capture():
    with open(os.path.join(CAPTURES, "fragmentation_experiment", "capture.json")) as handle:
        measured = measure(json.load(handle))
    assert measured.oom and measured.oom_cached == 768 * MIB and measured.fragmentation == 0.5
    assert measured.driver_peak == 2250244096 and measured.peak_reserved == 1536 * MIB


def test_the_chosen_intervention_is_item_7_of_the_report(tmp_path, capsys):
    capture = tmp_path / "baseline-run-1"
    shutil.copytree(os.path.join(CAPTURES, "fragmentation_experiment"), capture)
    data = recorded("fragmentation")
    data["variants"][0]["runs"][0]["capture"] = str(capture)
    data["output_dir"] = str(tmp_path)
    note_in_capture(data)
    assert main(["report", str(capture), "--source-root", os.path.join(ROOT, "scenarios")]) == 0
    text = capsys.readouterr().out
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections[6] == "## Chosen intervention"
    chosen = text.split("## Chosen intervention", 1)[1].split("## ", 1)[0]
    assert chosen.lstrip().startswith("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: prevented the OOM")
    assert "| PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.6 | 3/3 |" in chosen
