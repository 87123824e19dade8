"""Dry run of every real workload on the CPU: the recorded command line and each confirming run's.

Runs each workload's script from a copy of its folder with the arguments record.py would give it
on the GPU (baseline, halved batch, halved steps, the fix), plus --device cpu --dry-run (tiny sizes;
nanoGPT gets its own overrides), in the interpreter given (e.g. .venv-dry from setup_venv.sh).
A wrong flag, a missing import or a broken fix shows here instead of on the GPU machine.

    .venv-dry/bin/python workloads/dryrun/check_workloads.py [--only NAME ...] [--round N] [--jobs 2]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from manifest import WORKLOADS  # noqa: E402
from record import set_arg, variant_specs_of  # noqa: E402

NANOGPT_CPU = ["--device=cpu", "--dtype=float32", "--batch_size=2", "--block_size=32", "--n_layer=1", "--n_head=2",
               "--n_embd=32", "--max_iters=2", "--eval_iters=1"]


def command_lines(workload) -> list[tuple[str, list[str]]]:
    args = list(workload.args)
    if "--batch-size" in workload.sized_by:
        args = set_arg(args, "--batch-size", 64)
    lines = [("baseline", args)]
    for kind, spec in variant_specs_of(workload, args):
        if kind == "argument":
            flag, value = spec.split("=", 1)
            lines.append((spec, set_arg(args, flag, value)))
    return lines


def run_one(python: str, folder: Path, workload, label: str, args: list[str]) -> tuple[str, bool, str, float]:
    if workload.progress.startswith("^iter"):
        tail = NANOGPT_CPU
    else:
        tail = ["--device", "cpu", "--dry-run"]
    command = [python, workload.script, *args, *tail]
    if workload.launcher == "torchrun":
        command = [python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1", workload.script, *args, *tail]
    started = time.monotonic()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)
    output = (done.stdout + done.stderr).strip().splitlines()
    return f"{workload.name} [{label}]", done.returncode == 0, output[-1] if output else "", time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--round", type=int, help="only the workloads of this recording round (manifest: round)")
    parser.add_argument("--jobs", type=int, default=2)
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cpu-check-"))
    jobs = []
    for folder, family in {w.folder: w.family for w in WORKLOADS}.items():  # a family may run from several folders
        shutil.copytree(HERE / family, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for workload in WORKLOADS:
        if (options.only and workload.name not in options.only) or (options.round and workload.round != options.round):
            continue
        folder = root / workload.folder
        for step in workload.prep:
            extra = [] if step[0] == "prepare_data.py" else ["--device", "cpu", "--dry-run"]
            subprocess.run([options.python, *step, *extra], cwd=folder, check=True, capture_output=True)
        jobs += [(folder, workload, label, args) for label, args in command_lines(workload)]
    failures = 0
    with concurrent.futures.ThreadPoolExecutor(options.jobs) as pool:
        for name, ok, last, seconds in pool.map(lambda job: run_one(options.python, *job), jobs):
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name} ({seconds:.1f} s): {last[:150]}", flush=True)
    print(f"{len(jobs) - failures} passed, {failures} failed")
    shutil.rmtree(root, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
