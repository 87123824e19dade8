"""`vramlens run` where it cannot run: one clear sentence, exit code 2, nothing written.

These run the real agent in real interpreters: one with the CPU build of torch (no CUDA),
one with no torch at all.
"""

import importlib.util
import subprocess
import sys
import venv

import pytest

needs_cpu_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch (CPU build) not installed")


def vramlens(*args, cwd):
    return subprocess.run([sys.executable, "-m", "vramlens", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("import torch\nx = torch.zeros(4, device='cuda')\n")
    return path


def assert_nothing_written(folder):
    leftovers = [p for p in folder.rglob("*") if ".vramlens" in p.parts or p.name.startswith(".")]
    assert leftovers == []


def test_script_not_found(tmp_path):
    result = vramlens("run", str(tmp_path / "missing.py"), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == f"vramlens: Script not found: {tmp_path / 'missing.py'}."
    assert_nothing_written(tmp_path)


@needs_cpu_torch
def test_no_cuda_in_that_interpreter(tmp_path, script):
    result = vramlens("run", "-o", str(tmp_path / "cap"), str(script), cwd=tmp_path)
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("vramlens: CUDA is not available in ")
    assert "vramlens analyze" in last
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "cap").exists()
    assert_nothing_written(tmp_path)


def test_interpreter_without_torch(tmp_path, script):
    bare = tmp_path / "bare-env"
    venv.EnvBuilder(with_pip=False).create(bare)
    result = vramlens("run", "--python", str(bare / "bin" / "python"), "-o", str(tmp_path / "cap"), str(script), cwd=tmp_path)
    assert result.returncode == 2
    assert "PyTorch cannot be imported in" in result.stderr and "--python" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "cap").exists()


def test_interpreter_that_does_not_exist(tmp_path, script):
    result = vramlens("run", "--python", str(tmp_path / "nope" / "python"), str(script), cwd=tmp_path)
    assert result.returncode == 2
    assert "Cannot start the interpreter" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_memory_limit(tmp_path, script):
    result = vramlens("run", "--memory-limit", "lots", str(script), cwd=tmp_path)
    assert result.returncode == 2
    assert "--memory-limit" in result.stderr and "24GiB" in result.stderr
