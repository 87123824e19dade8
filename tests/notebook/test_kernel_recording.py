"""Recording inside a real Jupyter kernel (ipykernel, driven over jupyter_client), end to end.

Two ways in: `vramlens run NOTEBOOK.ipynb` (a fresh kernel, cell by cell, as the editor's Diagnose
does), and the magics in a kernel of the user's own (`%load_ext vramlens`, `%vramlens …`,
`%%vramlens`). The kernel and IPython are real; only torch is the stand-in of tests/agent_double
(a pretend 8 GiB CUDA device), as this machine has no GPU. tests/gpu/test_notebook.py runs a
notebook on the real torch.
"""

import json
import os
import subprocess
import sys
import threading
import time

import nbformat
import pytest
from jupyter_client.manager import start_new_kernel

from vramlens.analysis import analyze_path
from vramlens.runner import RunOptions
from vramlens.runner.notebook import run_notebook

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOUBLE = os.path.join(ROOT, "tests", "agent_double")
SERVER = os.path.join(ROOT, "server")
GiB = 2**30


@pytest.fixture
def double_env(monkeypatch):
    """The stand-in torch for every process started from here (the runner's driver and its kernel)."""
    monkeypatch.setenv("PYTHONPATH", DOUBLE)
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)


def notebook(folder, name, *cells):
    """A notebook file: strings are code cells, ("md", text) markdown cells."""
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_markdown_cell(cell[1]) if isinstance(cell, tuple) else nbformat.v4.new_code_cell(cell)
                  for cell in cells]
    path = folder / name
    nbformat.write(book, str(path))
    return path


def meta_of(capture):
    return json.loads((capture / "capture.json").read_text())


def cli(*args, cwd, env_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([env_path, SERVER]))
    return subprocess.run([sys.executable, "-m", "vramlens", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180)


LEAKY = (
    ("md", "# A notebook whose failure keeps its memory"),
    "import torch\n\ndef step(n):\n    acts = torch.empty(n * 2**30)\n    raise ValueError('bad shape')",
    # As a user would after a failing cell: the kernel keeps that cell's traceback, and with it `acts`.
    "import sys\ntry:\n    step(3)\nexcept ValueError as error:\n    sys.last_type, sys.last_value, sys.last_traceback = type(error), error, error.__traceback__",
    "kept = torch.empty(2**30)\nkept",
    "big = torch.empty(5 * 2**30)",
    "print('never reached')",
)


def test_run_notebook_records_cells_the_oom_and_the_kept_traceback(tmp_path):
    path = notebook(tmp_path, "leak.ipynb", *LEAKY)
    run = cli("run", "-o", tmp_path / "cap", path, cwd=tmp_path, env_path=DOUBLE)
    assert run.returncode == 1, run.stderr
    assert "never reached" not in run.stdout  # like Run All, the cells after the failing one do not run
    meta = meta_of(tmp_path / "cap")
    assert (meta["status"], meta["snapshot_moment"]) == ("oom", "oom")
    assert meta["script"] == str(path)
    cells = meta["notebook"]["cells"]
    assert [(cell["index"], cell["outcome"]) for cell in cells] == [(1, "ok"), (2, "ok"), (3, "ok"), (4, "oom")]
    assert [cell["execution_count"] for cell in cells] == [1, 2, 3, 4]
    assert cells[3]["source"] == "big = torch.empty(5 * 2**30)"
    assert all(cell["code_name"] and cell["code_name"].endswith(".py") for cell in cells)  # ipykernel's cell files
    # At the failing allocation, the kept traceback held `acts` (3 GiB), which nothing else did.
    at_oom = {h["root"]: h for h in meta["notebook"]["kernel_holders_at_oom"]["holders"]}
    held = at_oom["sys.last_traceback"]
    assert (held["bytes"], held["exclusive_bytes"]) == (3 * GiB, 3 * GiB)
    assert held["frames"][0]["name"] == "step"
    assert held["free"].startswith("import sys; sys.last_type = sys.last_value = sys.last_traceback = None")
    assert at_oom["Out[3]"]["exclusive_bytes"] == 0 and at_oom["Out[3]"]["shared_with"] == ["kept"]

    analysis = analyze_path(tmp_path / "cap")
    assert analysis.oom.site.path == cells[3]["code_name"]
    # The tensor census at the OOM names the same holders: IPython's output history as an extra root.
    holders = {holder.root: holder.bytes for holder in analysis.holders}
    assert holders["Out[3]"] == GiB
    assert [b for root, b in holders.items() if root.startswith("sys.last_traceback")] == [3 * GiB]
    top = {line.label: line.live_bytes for line in analysis.lines if line.path}
    assert top == {"leak.ipynb cell 2 line 4": 3 * GiB, "leak.ipynb cell 4 line 1": GiB}
    assert any("the kernel itself kept 3.00 GiB" in fact for fact in analysis.diagnosis.evidence)
    assert "sys.last_traceback = None" in analysis.recommendations[0].action

    text = cli("analyze", tmp_path / "cap", cwd=tmp_path, env_path=DOUBLE).stdout
    assert "The failing 5.00 GiB request was made at leak.ipynb cell 5 line 1 (`big = torch.empty(5 * 2**30)`)." in text
    assert "1. leak.ipynb cell 2 line 4 in step: 3.00 GiB live" in text
    assert "[4] leak.ipynb cell 5 — oom" in text


def test_a_completed_notebook_ends_with_its_end_capture_and_progress(tmp_path, double_env):
    path = notebook(tmp_path, "ok.ipynb", "import torch\nx = torch.empty(2**30)", ("md", "text"), "y = torch.empty(2**29)\ndel x")
    progress = []
    options = RunOptions(script=path, capture_dir=tmp_path / "cap", cwd=tmp_path, on_progress=progress.append,
                         output=open(os.devnull, "w"))
    result = run_notebook(options)
    assert (result.exit_code, result.status) == (0, "completed")
    meta = meta_of(tmp_path / "cap")
    assert meta["snapshot_moment"] == "end" and meta["notebook"]["kernel_holders"]["holders"] == []
    assert [cell["index"] for cell in meta["notebook"]["cells"]] == [0, 2]
    assert meta["nvml"]["pid"] == meta["pid"]  # sampled by the kernel's process, not the driver's
    assert progress and all(set(p) == {"cell", "code_cell", "code_cells"} for p in progress)
    lines = {line.label: line.live_bytes for line in analyze_path(tmp_path / "cap").lines if line.path}
    assert lines == {"ok.ipynb cell 1 line 2": GiB, "ok.ipynb cell 3 line 1": GiB // 2}  # live at the peak


def test_a_notebooks_cap_and_refused_free_stacks_are_recorded_as_a_scripts_are(tmp_path):
    path = notebook(tmp_path, "capped.ipynb", "import torch\nsettings = {'gradient_checkpointing': True}\n"
                    "x = torch.empty(2**30)")
    run = cli("run", "--memory-limit", "2GiB", "--free-stacks", "-o", tmp_path / "cap", path, cwd=tmp_path,
              env_path=DOUBLE)
    assert run.returncode == 0, run.stderr
    meta = meta_of(tmp_path / "cap")
    assert meta["memory_limit"] == {"requested": "2GiB", "fraction": 0.25, "bytes": 2 * GiB}  # of the 8 GiB stand-in
    assert meta["recording"]["context"] == "alloc"
    assert any(note.startswith("--free-stacks was not applied: the notebook uses activation checkpointing")
               for note in meta["notes"])


def test_cancelling_interrupts_the_running_cell_and_keeps_what_it_recorded(tmp_path, double_env):
    path = notebook(tmp_path, "slow.ipynb", "import torch, time\nx = torch.empty(2**30)",
                    "while True:\n    time.sleep(0.05)", "print('after')")
    cancel = threading.Event()
    seen = []

    def on_progress(state):
        seen.append(state)
        if state["code_cell"] == 2:
            threading.Timer(1.0, cancel.set).start()

    options = RunOptions(script=path, capture_dir=tmp_path / "cap", cwd=tmp_path, cancel=cancel, on_progress=on_progress,
                         output=open(os.devnull, "w"))
    started = time.monotonic()
    result = run_notebook(options)
    assert time.monotonic() - started < 60
    assert result.status == "cancelled"
    cells = meta_of(tmp_path / "cap")["notebook"]["cells"]
    assert [(cell["index"], cell["outcome"]) for cell in cells] == [(0, "ok"), (1, "interrupted")]


def test_an_interpreter_without_ipykernel_is_told_so(tmp_path):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    path = notebook(tmp_path, "nb.ipynb", "1")
    run = cli("run", "--python", bare / "bin" / "python", "-o", tmp_path / "cap", path, cwd=tmp_path, env_path=DOUBLE)
    assert run.returncode == 2
    assert "has no ipykernel, which running a notebook needs: install it there with" in run.stderr
    assert not (tmp_path / "cap").exists()


def test_a_kernel_that_dies_before_any_capture_ends_as_a_script_would(tmp_path):
    # The same failure as a script's os._exit: the run's own exit status (the driver's 1 for a dead
    # kernel), not the 2 of a run that could not start.
    path = notebook(tmp_path, "gone.ipynb", "import os\nos._exit(3)", "print('never reached')")
    run = cli("run", "-o", tmp_path / "cap", path, cwd=tmp_path, env_path=DOUBLE)
    assert run.returncode == 1, run.stderr
    assert "The kernel died while running the notebook (exit code 3) before it could write a capture" in run.stderr
    assert not (tmp_path / "cap").exists()


def test_a_file_that_is_not_a_notebook_is_told_so(tmp_path):
    (tmp_path / "broken.ipynb").write_text("{not json")
    run = cli("run", "-o", tmp_path / "cap", tmp_path / "broken.ipynb", cwd=tmp_path, env_path=DOUBLE)
    assert run.returncode == 2 and "broken.ipynb is not a readable notebook" in run.stderr


# -- the magics in a kernel of the user's own ---------------------------------------------------
@pytest.fixture
def kernel(tmp_path, monkeypatch):
    """A kernel as Jupyter starts one, with vramlens importable (server/ on its path) and the stand-in torch."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([DOUBLE, SERVER]))
    monkeypatch.chdir(tmp_path)
    manager, client = start_new_kernel(kernel_name="python3", startup_timeout=60)
    yield manager, client
    client.stop_channels()
    if manager.is_alive():
        manager.shutdown_kernel(now=True)


def execute(client, code, cell_id=None):
    """Run one cell as a front end does; its printed output and its reply."""
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False,
               "stop_on_error": True}
    message = client.session.msg("execute_request", content, metadata={"cellId": cell_id} if cell_id else {})
    client.shell_channel.send(message)
    msg_id = message["header"]["msg_id"]
    output = []
    while True:
        reply = client.get_iopub_msg(timeout=60)
        if reply["parent_header"].get("msg_id") != msg_id:
            continue
        if reply["msg_type"] == "stream":
            output.append(reply["content"]["text"])
        if reply["msg_type"] == "status" and reply["content"]["execution_state"] == "idle":
            break
    while True:  # replies to the client's own startup requests (kernel_info) may still be queued
        shell = client.get_shell_msg(timeout=60)
        if shell["parent_header"].get("msg_id") == msg_id:
            return "".join(output), shell["content"]


def test_magics_in_the_users_kernel(kernel, tmp_path):
    manager, client = kernel
    cap = tmp_path / "cap"
    assert execute(client, "%load_ext vramlens")[1]["status"] == "ok"
    out, _ = execute(client, f"%vramlens start --capture {cap}", cell_id="c-start")
    assert f"captures go to {cap}" in out
    execute(client, "import torch\nfeatures = torch.empty(2**30)", cell_id="c-feat")
    execute(client, "features\n", cell_id="c-show")  # kept in Out[4] and _ as well as in `features`
    out, reply = execute(client, "def grow():\n    scratch = torch.empty(3 * 2**30)\n    torch.empty(8 * 2**30)\ngrow()",
                         cell_id="c-grow")
    assert reply["status"] == "error" and reply["ename"] == "OutOfMemoryError"
    oom = meta_of(cap)
    assert oom["status"] == "oom" and oom["exception"]["frames"][0]["line"] == 4
    logged = oom["notebook"]["cells"]
    assert [c["outcome"] for c in logged[:2]] == ["before_recording"] * 2  # the cells that ran before `start`
    assert [c["cell_id"] for c in logged[2:]] == ["c-feat", "c-show", "c-grow"]
    after = {h["root"]: h for h in oom["notebook"]["kernel_holders"]["holders"]}
    assert after["sys.last_traceback"]["exclusive_bytes"] == 3 * GiB  # `scratch`, kept by the traceback

    out, _ = execute(client, "%vramlens status")
    assert "sys.last_traceback keeps 3.00 GiB only there" in out
    assert "free it with: import sys; sys.last_type = sys.last_value = sys.last_traceback = None" in out
    execute(client, "import sys; sys.last_type = sys.last_value = sys.last_traceback = None")
    out, _ = execute(client, "%vramlens snapshot")
    assert f"capture written to {cap}" in out
    snapshot = meta_of(cap)
    assert (snapshot["status"], snapshot["snapshot_moment"]) == ("on_demand", "on_demand")
    assert "sys.last_traceback" not in {h["root"] for h in snapshot["notebook"]["kernel_holders"]["holders"]}

    # A recorded cell of its own: its lines are the cell's lines (the magic is line 1).
    out, reply = execute(client, "%%vramlens\nlocal = torch.empty(2**29)\nlocal\n", cell_id="c-magic")
    assert reply["status"] == "ok" and f"capture of this cell written to {cap}" in out
    execute(client, "%vramlens stop")
    stopped = meta_of(cap)
    assert stopped["status"] == "completed"
    analysis = analyze_path(cap)
    labels = {line.label for line in analysis.lines if line.path and line.allocated_bytes}
    # No notebook file here: cells are named by execution number, never guessed.
    assert {"the kernel In [3] line 2", "the kernel In [5] line 2", "the kernel In [9] line 2"} <= labels

    # After stop, the kernel's shutdown writes nothing more; a new start records again until exit.
    execute(client, f"%vramlens start --capture {tmp_path / 'second'}")
    execute(client, "more = torch.empty(2**28)")
    manager.shutdown_kernel(now=False)
    assert meta_of(tmp_path / "second")["status"] == "completed"
