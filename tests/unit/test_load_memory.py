"""The loader's memory ceiling: what real snapshots need is admitted, and a trusted large one can be
given more (--load-memory, VRAMLENS_LOAD_MEMORY), as the refusal sentence says."""

import json
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


# In a fresh interpreter: the ceiling bounds new address space, which one that ran other tests may not need.
REFUSALS = r"""
import json, os, sys
from vramlens.capture import CaptureError, load_capture, memory_ceiling
memory_ceiling.GROWTH_PER_BYTE, memory_ceiling.SLACK = 0, 1 << 20  # as if this real snapshot were over the default
said = []
for allowance in (None, "2MiB", "unlimited"):
    if allowance:
        os.environ[memory_ceiling.ENV_VAR] = allowance
    try:
        said.append(bool(load_capture(sys.argv[1]).snapshot["device_traces"]))
    except CaptureError as error:
        said.append(str(error))
print(json.dumps(said))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the ceiling is RLIMIT_AS, Linux only")
def test_a_refused_load_names_the_way_to_allow_more_and_the_environment_allows_it():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "server"))
    env.pop(memory_ceiling.ENV_VAR, None)
    done = subprocess.run([sys.executable, "-c", REFUSALS, str(REAL)], env=env, capture_output=True, text=True,
                          timeout=120)
    default, chosen, unlimited = json.loads(done.stdout)
    assert "would need more than 1.0 MiB" in default and "--load-memory 1GiB" in default
    assert memory_ceiling.ENV_VAR in default
    assert "needs more than the 2.0 MiB of memory allowed for loading it" in chosen
    assert unlimited is True


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
