"""The cause decision's mechanisms on real captures (recorded on an H200): round 5's, whose first
figures were measured held out (BENCHMARKS.md) before these mechanisms were written, so they are in
sample from here on, and round 4's first forward pass.

- attention_maps_batch_oom (measured working_set, R4: half the batch fits, expandable segments does
  not): a split cache met by a first forward pass still saving activations at the very limit.
- vit_forward_oom: the same shape; its calibration's baseline peaked above the cap (8.19 GiB allocated
  against 6.41 GiB), so no layout could have held the step.
- generate_scores_kept: every generate() call's scores kept in a list in main; the trace's steps are
  one call's decoding steps, and the census shows the list of earlier calls' results.
- dataset_cache_on_gpu: a Dataset memoising its samples on the GPU, growing every training step.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.workloads import unpack
from vramlens.analysis import analyze_path

CORPUS = Path(__file__).resolve().parent / "fixtures" / "realworld"


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("causes")
    for round_folder in ("round4", "round5"):
        unpack.extract_compressed(CORPUS / round_folder, folder)
    return folder


def analysis_of(captures: Path, name: str):
    return analyze_path(captures / name / "capture")


def ground_truth(captures: Path, name: str) -> dict:
    return json.loads((captures / name / "ground_truth.json").read_text())


def test_a_first_forward_pass_at_the_limit_is_the_working_set_as_measured(captures):
    measured = ground_truth(captures, "attention_maps_batch_oom")
    assert measured["cause"] == "working_set"
    result = analysis_of(captures, "attention_maps_batch_oom")
    acc = result.accounting
    # The fragmentation rule's own condition holds: packed it fits, no piece holds it...
    assert acc.allocated + acc.request <= acc.limit and acc.largest_free_block < acc.request
    assert acc.limit - acc.reserved < acc.request
    # ...yet the call is the working set, the allocator experiment proposed to decide it.
    assert (result.diagnosis.cause, result.diagnosis.alternative) == ("working_set", "fragmentation")
    assert result.diagnosis.confirm.variants == [{"kind": "allocator", "setting": "expandable_segments:True"}]
    assert any("activations saved for the backward" in fact for fact in result.diagnosis.evidence)


def test_a_forward_pass_whose_run_needs_more_than_the_limit_is_not_called_fragmentation(captures):
    calibration = ground_truth(captures, "vit_forward_oom")["calibration"]
    baseline = dict(calibration["runs"])["baseline"]
    assert baseline["peak_allocated"] > calibration["cap"]  # the step needs more than the limit, packed or not
    result = analysis_of(captures, "vit_forward_oom")
    assert result.diagnosis.cause == "working_set"


def test_generate_results_kept_across_calls_are_retained_before_the_split_cache(captures):
    result = analysis_of(captures, "generate_scores_kept")
    assert result.steps is not None and "_sample" in result.steps.driver  # the steps are one call's tokens
    assert result.accounting.largest_free_block < result.accounting.request  # the split cache is there too
    assert result.diagnosis.cause == "retained_references"
    assert any("all_scores" in fact and "earlier calls" in fact for fact in result.diagnosis.evidence)
    assert result.diagnosis.confirm.variants == [{"kind": "argument", "flag": "--batches", "value": "20"}]
    # Calibration: half the batches completed, so the memory grows with them.
    calibration = dict(ground_truth(captures, "generate_scores_kept")["calibration"]["runs"])
    assert calibration["--batches 20"]["oom"] is False


def test_a_dataset_memoising_samples_on_the_gpu_across_training_steps_is_retention(captures):
    result = analysis_of(captures, "dataset_cache_on_gpu")
    assert result.mode == "training"
    assert result.diagnosis.cause == "retained_references"
    assert any("training step" in fact for fact in result.diagnosis.evidence)
    assert not any("a cache growing as designed" in fact for fact in result.diagnosis.evidence)
    assert not any("Size generate()'s cache" in r.action for r in result.recommendations)
    assert any("dataset._cache" in r.action for r in result.recommendations)


def test_a_first_forward_pass_does_not_quote_its_shortfall_as_the_amount_to_save(captures):
    """Inside a first forward pass the failing allocation's shortfall (15 MiB here) is a floor, not the need:
    the first fix says the remaining layers and the backward need more; an OOM after a completed step keeps
    the shortfall as its figure."""
    forward = " ".join(r.action for r in analysis_of(captures, "attention_maps_batch_oom").recommendations)
    assert "far more than the 15.00 MiB" in forward and "its remaining layers and the backward" in forward
    # AdamW's first step.step(): the forward and backward are over, so the shortfall is the figure
    optimizer = " ".join(r.action for r in analyze_path(CORPUS / "adamw_first_step" / "capture").recommendations)
    assert "clearly more than" in optimizer and "far more than" not in optimizer
