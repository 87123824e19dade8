"""Recording never changes what a program does: real programs of workloads/compat run bare and under
`vramlens run`, compared on exit code and their own output (step times aside). The full matrix, with
the step-time overhead, is benchmarks/compat_matrix.py."""

import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAMS = os.path.join(ROOT, "workloads", "compat")
TIMING = re.compile(r"^(\[rank\d+\]:\s*)?step_ms ")


def own_output(stdout):
    return sorted(line for line in stdout.splitlines() if not TIMING.match(line) and not line.startswith("vramlens: "))


def bare(program, *args, launcher=()):
    return subprocess.run([sys.executable, *launcher, os.path.join(PROGRAMS, program), *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def meta_of(capture):
    with open(os.path.join(capture, "capture.json")) as meta:
        return json.load(meta)


def test_hf_gradient_checkpointing_runs_as_without_vramlens(vramlens, tmp_path):
    """The regression: free-side stacks made this backward() fail with SystemError (run_backward
    returned NULL without setting an exception). Stacks are now gathered at allocations only."""
    program = os.path.join(PROGRAMS, "hf_bert_gc.py")
    plain = bare("hf_bert_gc.py", "--steps", 3)
    assert plain.returncode == 0, plain.stderr[-2000:]
    recorded = vramlens("run", "-o", tmp_path / "cap", program, "--steps", 3)
    assert recorded.returncode == 0, recorded.stderr[-2000:]
    assert "SystemError" not in recorded.stderr
    assert own_output(recorded.stdout) == own_output(plain.stdout)
    assert meta_of(tmp_path / "cap")["recording"]["context"] == "alloc"
    # Asked for free-side stacks, a checkpointing script is still recorded the safe way, and told so.
    asked = vramlens("run", "--free-stacks", "-o", tmp_path / "asked", program, "--steps", 2)
    assert asked.returncode == 0, asked.stderr[-2000:]
    meta = meta_of(tmp_path / "asked")
    assert meta["recording"]["context"] == "alloc"
    assert any("--free-stacks was not applied" in note for note in meta["notes"])


@pytest.mark.parametrize("program, args, launcher", [
    ("checkpoint_loop.py", ["--temporary", "--steps", 5], ()),  # the early stop frees a local as it unwinds
    ("compile_modes.py", ["--mode", "reduce-overhead", "--steps", 8], ()),  # CUDA graphs, private pool
    ("torchrun_gloo.py", [], ("-m", "torch.distributed.run", "--nproc-per-node", "2")),
])
def test_programs_behave_the_same_recorded(vramlens, tmp_path, program, args, launcher):
    plain = bare(program, *args, launcher=launcher)
    path = os.path.join(PROGRAMS, program)
    if launcher:
        recorded = vramlens("run", "-o", tmp_path / "cap", "--torchrun", "--nproc-per-node", "2", path, *args)
    else:
        recorded = vramlens("run", "-o", tmp_path / "cap", path, *args)
    assert (recorded.returncode, plain.returncode) == (0, 0), recorded.stderr[-2000:] + plain.stderr[-2000:]
    assert own_output(recorded.stdout) == own_output(plain.stdout)


def test_a_cnn_oom_after_cudnn_probes_has_its_census(vramlens, tmp_path):
    """cuDNN's workspace probes are OOMs it catches: they cost no census, are counted, and the OOM that
    ends the run has its census with roles."""
    script = os.path.join(PROGRAMS, "resnet50_oom.py")
    measured = bare("resnet50_oom.py", "--measure", "--steps", 1).stdout.split()
    after_forward = int(measured[measured.index("after_forward") + 1])
    run = vramlens("run", "-o", tmp_path / "cap", "--memory-limit", f"{after_forward // 2**20}MiB", script)
    assert run.returncode == 1 and "OutOfMemoryError" in run.stderr
    meta = meta_of(tmp_path / "cap")
    oom = meta["oom"]
    assert meta["status"] == "oom" and oom["count"] >= 1 and meta["census"]
    if sys.version_info >= (3, 12):  # the raises are watched with sys.monitoring
        assert oom["caught_below_python"] == oom["count"] - 1
    with open(tmp_path / "cap" / meta["census"]) as census:
        assert json.load(census)["moment"] == "oom"
    report = json.loads(vramlens("analyze", "--json", tmp_path / "cap").stdout)
    assert report["outcome"] == "oom"
    assert report.get("roles"), "the census at the OOM names what the memory was"
