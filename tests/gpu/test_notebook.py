"""A real notebook on the real GPU, recorded inside its kernel: through `vramlens run NOTEBOOK.ipynb`
(what the editor's Diagnose does) and through the magics in a kernel started as Jupyter starts one.

scenarios/notebook_kept_outputs.ipynb (written by scenarios/make_notebooks.py) displays two losses,
so Out[3] and Out[4] keep their autograd graphs, keeps eight more graphs in a list, and runs out of
memory in its last cell under a 4 GiB cap. Needs ipykernel, jupyter_client and nbformat in the
interpreter (on the GPU machine: carried as wheels). VRAMLENS_NOTEBOOK_RECORD=DIR keeps the capture
of the `vramlens run` as DIR/notebook_kept_outputs, to be committed as a fixture.
"""

import json
import os
import shutil
import sys

import pytest

pytestmark = pytest.mark.gpu
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NOTEBOOK = os.path.join(ROOT, "scenarios", "notebook_kept_outputs.ipynb")
MiB = 2**20


def load_meta(capture):
    with open(os.path.join(capture, "capture.json")) as meta:
        return json.load(meta)


def test_run_names_the_cell_and_line_and_the_outputs_that_keep_graphs(vramlens, tmp_path):
    pytest.importorskip("ipykernel")
    capture = tmp_path / "notebook_kept_outputs"
    run = vramlens("run", "-o", capture, "--max-entries", "20000", "--memory-limit", "4GiB", NOTEBOOK, timeout=600)
    assert run.returncode == 1, run.stderr
    meta = load_meta(capture)
    assert (meta["status"], meta["snapshot_moment"]) == ("oom", "oom")
    assert meta["environment"]["gpu_name"] and meta["nvml"]["pid"] == meta["pid"]
    cells = meta["notebook"]["cells"]
    assert [cell["index"] for cell in cells] == [1, 2, 3, 4, 5, 6]
    assert cells[-1]["outcome"] == "oom"
    at_oom = {holder["root"]: holder for holder in meta["notebook"]["kernel_holders_at_oom"]["holders"]}
    for root in ("Out[3]", "Out[4]"):  # each displayed loss keeps the activations its graph saved
        held = at_oom[root]
        assert held["free"] == f"%xdel _{root[4]}"
        # Measured on the H200: Out[3] 64 MiB of its own (80 MiB through its graph), Out[4] 32 MiB.
        assert held["exclusive_bytes"] >= 16 * MiB and held["graph_bytes"] >= 16 * MiB, held
    if os.environ.get("VRAMLENS_NOTEBOOK_RECORD"):
        keep = os.path.join(os.environ["VRAMLENS_NOTEBOOK_RECORD"], "notebook_kept_outputs")
        shutil.rmtree(keep, ignore_errors=True)
        shutil.copytree(capture, keep)

    analysis = vramlens("analyze", "--json", capture)
    assert analysis.returncode == 0, analysis.stderr
    report = json.loads(analysis.stdout)
    top = next(line for line in report["lines"] if line["cell"])
    assert top["cell"]["label"] == "notebook_kept_outputs.ipynb cell 3" and top["line"] == 3  # return model(x)…
    assert top["function"] == "loss_of" and top["source"] == "return model(x).square().mean()"
    assert report["oom"]["site"]["source"].startswith("big = torch.empty(3 * 2**30")
    # The list of losses keeps eight graphs (1.9 GiB of saved activations): fixed first; the kernel's own
    # Out[3]/Out[4] (96 MiB, under 5 % of what was live) are named in the capture's kernel holders.
    assert report["recommendations"][0]["action"].startswith("Keep .item() or .detach() of what __main__.losses")
    text = vramlens("analyze", capture).stdout
    assert "made at notebook_kept_outputs.ipynb cell 7 line 1" in text
    assert "notebook_kept_outputs.ipynb cell 3 line 3 in loss_of" in text


def test_the_magics_in_a_kernel_started_as_jupyter_starts_one(tmp_path):
    pytest.importorskip("ipykernel")
    import nbformat
    from jupyter_client.manager import start_new_kernel

    book = nbformat.read(NOTEBOOK, as_version=4)
    capture = tmp_path / "cap"
    magic = nbformat.v4.new_code_cell(f"%load_ext vramlens\n%vramlens start --capture {capture} --memory-limit 4GiB")
    cells = [magic] + [cell for cell in book.cells if cell.cell_type == "code"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "server"), os.environ.get("PYTHONPATH", "")]))
    manager, client = start_new_kernel(kernel_name="python3", startup_timeout=120, env=env, cwd=str(tmp_path))
    try:
        replies = [client.execute_interactive(cell.source, timeout=300, output_hook=lambda message: None)["content"]
                   for cell in cells]
        assert [reply["status"] for reply in replies] == ["ok"] * 6 + ["error"]
        assert replies[-1]["ename"] == "OutOfMemoryError"
        meta = load_meta(capture)
        assert meta["status"] == "oom"
        # Cells with the same source share a code name, so the execution counts are read per logged cell.
        assert sorted(cell["execution_count"] for cell in meta["notebook"]["cells"]) == [1, 2, 3, 4, 5, 6, 7]
        at_oom = {holder["root"] for holder in meta["notebook"]["kernel_holders_at_oom"]["holders"]}
        assert {"Out[4]", "Out[5]"} <= at_oom
        sys.path.insert(0, os.path.join(ROOT, "server"))
        from vramlens.analysis import analyze_path

        analysis = analyze_path(capture)
        top = next(line for line in analysis.lines if line.cell)
        # No notebook file is named in this kernel: the cell is named by its execution number, never guessed.
        assert top.label == "the kernel In [3] line 3" and top.function == "loss_of"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
