"""The loader's memory ceiling: what real snapshots need is admitted, and a trusted large one can be
given more (--load-memory, VRAMLENS_LOAD_MEMORY), as the refusal sentence says."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vramlens.capture import CaptureError, load_capture, memory_ceiling

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "realworld" / "segmentation_multiscale" / "capture"  # 4.7 MiB snapshot, from a GPU


@pytest.fixture(autouse=True)
def no_choice(monkeypatch):
    monkeypatch.delenv(memory_ceiling.ENV_VAR, raising=False)
    yield
    memory_ceiling.choose(None)


def test_the_default_admits_what_real_snapshots_take():
    # Measured on real snapshots (BENCHMARKS.md): at most 13x their size; the ceiling is twice that.
    size = 20_700_000  # the 150k-entry snapshot an earlier ceiling (12x + 2 MiB) refused
    assert memory_ceiling.allowance_for(size) >= 2 * memory_ceiling.WORST_REAL_GROWTH * size >= 2 * 13 * size


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the ceiling is RLIMIT_AS, Linux only")
def test_a_refused_load_names_the_way_to_allow_more_and_the_environment_allows_it(monkeypatch):
    monkeypatch.setattr(memory_ceiling, "GROWTH_PER_BYTE", 0)  # as if this real snapshot were over the default
    monkeypatch.setattr(memory_ceiling, "SLACK", 1 << 20)
    with pytest.raises(CaptureError) as refused:
        load_capture(REAL)
    sentence = str(refused.value)
    assert "would need more than 1.0 MiB" in sentence and "--load-memory 1GiB" in sentence
    assert memory_ceiling.ENV_VAR in sentence
    monkeypatch.setenv(memory_ceiling.ENV_VAR, "2MiB")
    with pytest.raises(CaptureError, match="needs more than the 2.0 MiB of memory allowed for loading it"):
        load_capture(REAL)
    monkeypatch.setenv(memory_ceiling.ENV_VAR, "unlimited")
    assert load_capture(REAL).snapshot["device_traces"]


def test_the_flag_comes_before_the_environment_and_bad_sizes_are_one_sentence(monkeypatch):
    monkeypatch.setenv(memory_ceiling.ENV_VAR, "1MiB")
    memory_ceiling.choose("3GiB")
    assert memory_ceiling.allowance_for(10) == 3 << 30
    with pytest.raises(ValueError):
        memory_ceiling.choose("a lot")


def test_analyze_takes_load_memory():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "server"))
    env.pop(memory_ceiling.ENV_VAR, None)

    def analyze(*options):
        return subprocess.run([sys.executable, "-m", "vramlens", "analyze", *options, str(REAL)], env=env,
                              capture_output=True, text=True, timeout=120)

    bad = analyze("--load-memory", "lots")
    assert bad.returncode == 2 and "--load-memory not a size" in bad.stderr
    if sys.platform.startswith("linux"):
        refused = analyze("--load-memory", "1MiB")
        assert refused.returncode == 2 and "allowed for loading it (--load-memory" in refused.stderr
    assert analyze("--load-memory", "unlimited").returncode == 0
