"""`vramlens lint NB.ipynb` and `vramlens lint DIR`: a notebook's code cells are checked as one flow, and each
finding names its cell and its line within the cell."""

from __future__ import annotations

import json
import subprocess
import sys

from vramlens.lint import fix_file, lint_file, lint_paths

SETUP = ["import torch\n", "import torch.nn as nn\n", "%matplotlib inline\n", "model = nn.Linear(4, 4)\n",
         "criterion = nn.MSELoss()\n", "history = []\n"]
LOOP = ["def train(loader):\n", "    for x, y in loader:\n", "        loss = criterion(model(x), y)\n",
        "        loss.backward()\n", "        history.append(loss)\n"]


def _notebook(path, *cells):
    listed = [{"cell_type": "markdown", "metadata": {}, "source": ["# Notes\n"]}]
    listed += [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": c} for c in cells]
    path.write_text(json.dumps({"cells": listed, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def test_a_leak_across_cells_is_found_on_its_cell_and_line(tmp_path):
    notebook = _notebook(tmp_path / "train.ipynb", SETUP, LOOP)
    findings = lint_file(notebook, preview=True)
    assert [(f.code, f.cell, f.line) for f in findings] == [("VL102", 3, 5)]
    assert not findings[0].fixes  # a notebook is not rewritten


def test_the_command_line_prints_cell_and_line_and_a_folder_includes_notebooks(tmp_path):
    _notebook(tmp_path / "train.ipynb", SETUP, LOOP)
    (tmp_path / "clean.py").write_text("x = 1\n", encoding="utf-8")
    assert [f.cell for f in lint_paths([tmp_path], preview=True)] == [3]
    run = subprocess.run([sys.executable, "-m", "vramlens", "lint", "--preview", str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == 1
    assert "train.ipynb:cell 3:5:9: VL102" in run.stdout
    assert "2 files checked" in run.stderr


def test_a_cell_that_does_not_parse_does_not_silence_the_others(tmp_path):
    notebook = _notebook(tmp_path / "broken.ipynb", SETUP, ["def broken(:\n"], LOOP)
    found = {(f.code, f.cell) for f in lint_file(notebook, preview=True)}
    assert ("VL000", 3) in found and ("VL102", 4) in found


def test_not_a_notebook_is_one_sentence_and_fix_leaves_the_file_alone(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("import torch\n", encoding="utf-8")
    (finding,) = lint_file(bad)
    assert finding.code == "VL000" and "not valid JSON" in finding.message
    notebook = _notebook(tmp_path / "train.ipynb", SETUP, LOOP)
    before = notebook.read_bytes()
    assert fix_file(notebook) is None and notebook.read_bytes() == before
