"""Real ResNet-50 training steps recorded on the H200 under memory caps (tests/fixtures/captures/
resnet50_probes.tar.xz, see its README row): a backward-pass OOM whose capture names roles and holders,
and a run where cuDNN's workspace probes (OOMs it caught itself) came before the OOM that ended it. Each
census is the final OOM's; the probes are counted and said to be probes."""

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from vramlens.analysis import analyze_path

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "captures"
FIXTURE = CAPTURES / "resnet50_probes.tar.xz"


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    folder = tmp_path_factory.mktemp("resnet")
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(folder, filter="data")
    return folder


def meta_of(capture):
    return json.loads((capture / "capture.json").read_text())


def census_of(capture):
    return json.loads((capture / meta_of(capture)["census"]).read_text())


def test_a_backward_pass_oom_has_its_census_with_roles_and_holders(captures):
    capture = captures / "backward_oom"
    meta = meta_of(capture)
    assert meta["status"] == "oom" and "loss.backward()" in meta["exception"]["traceback"]
    assert meta["recording"]["context"] == "alloc"
    census = census_of(capture)
    assert census["moment"] == "oom" and census["epoch"] >= meta["oom"]["time"]
    analysis = analyze_path(capture)
    assert analysis.outcome == "oom" and analysis.mode == "training"
    assert {role.role for role in analysis.roles} >= {"parameters"}
    assert any("images" in holder.root for holder in analysis.holders)
    assert any("had no Python frame: the autograd engine made it" in line for line in analysis.diagnosis.evidence)


def test_the_census_is_the_final_ooms_after_cudnn_probes(captures):
    capture = captures / "forward_after_probes"
    meta = meta_of(capture)
    oom = meta["oom"]
    assert oom["count"] == 10 and oom["caught_below_python"] == 9
    census = census_of(capture)
    # Taken after the observer saw the last OOM: not at a probe (those took none).
    assert census["moment"] == "oom" and census["epoch"] >= oom["time"]
    analysis = analyze_path(capture)
    assert analysis.outcome == "oom" and analysis.roles
    assert any("Of the run's 10 OOMs, 9 were caught inside libraries" in note for note in analysis.notes)


def test_an_oom_without_its_census_is_read_with_the_peak_census_and_says_so(tmp_path):
    # A real capture whose OOM census is missing (as an older agent left one past its allowance):
    # the realworld segmentation run, with its end census left out.
    capture = tmp_path / "capture"
    shutil.copytree(CAPTURES.parent / "realworld" / "segmentation_multiscale" / "capture", capture)
    meta = meta_of(capture)
    meta["census"] = None
    (capture / "capture.json").write_text(json.dumps(meta))
    analysis = analyze_path(capture)
    assert analysis.outcome == "oom" and analysis.roles
    assert any("No census was taken at the OOM: the roles and holders shown are from the latest earlier census"
               in note for note in analysis.notes)
