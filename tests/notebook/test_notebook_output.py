"""A notebook's output is relayed as it is printed, never held: `vramlens run NB.ipynb` on a cell that
prints 200 MB stays far below that in every process (before: each of the kernel and the relaying
process held about three times what the cell printed). The kernel is a real ipykernel; torch is the
stand-in of tests/agent_double."""

import os
import subprocess
import sys

import nbformat

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MiB = 2**20
PRINTED = 200 * 10**6

# Run in a process of its own, whose children are the runner, its driver and (through it) the kernel:
# the largest peak RSS among them is RUSAGE_CHILDREN's ru_maxrss. The output is counted, not kept.
MEASURE = r"""
import resource, subprocess, sys
run = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
printed = 0
while True:
    chunk = run.stdout.read(1 << 20)
    if not chunk:
        break
    printed += chunk.count(b"x")
print(run.wait(), printed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def test_a_cell_printing_200_mb_is_streamed(tmp_path):
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell("import torch\nline = 'x' * 10_000_000\nfor _ in range(20):\n    print(line)")]
    path = tmp_path / "loud.ipynb"
    nbformat.write(book, str(path))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests", "agent_double"),
                                                      os.path.join(ROOT, "server")]))
    done = subprocess.run([sys.executable, "-c", MEASURE, sys.executable, "-m", "vramlens", "run", "-o",
                           str(tmp_path / "cap"), str(path)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    code, printed, peak = map(int, done.stdout.split())
    assert code == 0, done.stderr
    assert printed == PRINTED  # every character arrived
    assert peak < 300 * MiB, f"a process of the run peaked at {peak / MiB:.0f} MiB for {PRINTED / MiB:.0f} MiB printed"
