"""`bash scripts/demo.sh your_script.py` from the user's own folder, with the user's interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not (REPO / ".venv" / "bin" / "vramlens").exists(), reason="scripts/setup.sh has not made .venv")
def test_the_script_is_found_where_the_user_is_and_run_in_their_interpreter(tmp_path):
    (tmp_path / "my_script.py").write_text("import torch\nprint(torch.zeros(1).cuda())\n")
    env = dict(os.environ, VRAMLENS_PYTHON=sys.executable)
    done = subprocess.run(["bash", str(REPO / "scripts" / "demo.sh"), "my_script.py", "--flag", "1"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    err = done.stderr
    assert "Script not found" not in err and "No such file" not in err, err
    assert f"running my_script.py with {sys.executable}" in err
    # It did run there, in that interpreter: here, one without CUDA, which says so in one sentence.
    assert f"CUDA is not available in {sys.executable}" in err or done.returncode == 0, err
