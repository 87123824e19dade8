import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def vramlens():
    def run(*args, cwd=ROOT, timeout=300, **kwargs):
        # Packages carried to the GPU machine on PYTHONPATH (ipykernel for the notebook tests) stay visible.
        inherited = os.environ.get("PYTHONPATH")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "server")] + ([inherited] if inherited else [])))
        return subprocess.run([sys.executable, "-m", "vramlens", *map(str, args)], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=timeout, **kwargs)
    return run
