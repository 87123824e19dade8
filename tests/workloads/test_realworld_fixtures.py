"""The recorded real-workload fixtures (tests/fixtures/realworld/, from workloads/unpack.py) are
complete and their ground truth follows from their own files by the rule of workloads/README.md."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "realworld"

from harness.workloads import ground_truth, manifest

BY_NAME = manifest.BY_NAME

RECORDED = sorted(path for path in FIXTURES.glob("*") if (path / "ground_truth.json").is_file()) if FIXTURES.is_dir() else []
pytestmark = pytest.mark.skipif(not RECORDED, reason="no real-workload fixtures recorded yet (workloads/record.sh on a GPU)")


@pytest.mark.parametrize("fixture", RECORDED, ids=lambda path: path.name)
def test_ground_truth_follows_from_the_fixture(fixture):
    stored = json.loads((fixture / "ground_truth.json").read_text())
    recomputed = ground_truth.recompute(fixture)
    assert (recomputed["cause"], recomputed["rule"]) == (stored["cause"], stored["rule"])
    assert stored["workload"] == fixture.name and fixture.name in BY_NAME
    meta = ground_truth.primary_capture_meta(fixture / "capture")
    assert meta.get("format") == "vramlens-capture"
    assert "/workspace/" in meta["script"]  # recorded from the neutral folder


def test_the_readme_lists_every_fixture():
    text = (FIXTURES / "README.md").read_text()
    assert all(f"`{fixture.name}`" in text for fixture in RECORDED)
