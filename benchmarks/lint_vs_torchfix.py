"""Speed of `vramlens lint` against torchfix on the same real files, side by side.

Both tools run as command-line programs on the same list of transformers modeling files, alternating,
several repetitions; medians and the ratio are printed. Then one file of about 2,000 lines is linted
in-process repeatedly through the Python API (median per run).

torchfix is not a project dependency: install it in its own venv first, e.g.
    python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install torchfix==0.7.0
    .venv/bin/python benchmarks/lint_vs_torchfix.py [--files 200] [--reps 3] [--torchfix /tmp/tfvenv/bin/torchfix]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from lint_false_positives import count_lines, modeling_files, transformers_src, vramlens_cmd


# Both tools run as installed: with their bytecode cached (an environment that forbids writing it would time
# compiling each tool's own sources on every run; a warm-up run of each writes it first).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], env: dict | None = None) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env or _ENV)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{cmd[0]} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return elapsed


def spread(files: list[Path], n: int) -> list[Path]:
    """n files taken at an even stride through the sorted list (deterministic, no size bias)."""
    if n >= len(files):
        return files
    step = len(files) / n
    return [files[int(i * step)] for i in range(n)]


def in_process_linter():
    """Return (name, fn(path, text)) for the public in-process entry point of vramlens.lint."""
    import inspect

    import vramlens.lint as lint

    for name in ("lint_source", "lint_text", "lint_code", "lint_file", "lint_path", "lint_paths", "lint"):
        fn = getattr(lint, name, None)
        if not callable(fn):
            continue
        params = list(inspect.signature(fn).parameters)
        if name in ("lint_file", "lint_path"):
            return name, lambda path, text: fn(path)
        if name == "lint_paths":
            return name, lambda path, text: fn([path])
        if params and params[0] in ("path", "filename"):
            return name, lambda path, text: fn(str(path), text)
        return name, lambda path, text: fn(text, str(path))
    return None, None


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200, help="number of modeling files (default 200)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of each tool (default 3)")
    parser.add_argument("--single-runs", type=int, default=20, help="in-process runs on the ~2,000-line file")
    parser.add_argument("--torchfix", default="/tmp/tfvenv/bin/torchfix")
    args = parser.parse_args()

    root = transformers_src()
    every = modeling_files(root)
    files = spread(every, args.files)
    lines = count_lines(files)
    paths = [str(p) for p in files]
    print(f"machine: {cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"files: {len(files)} transformers modeling files, {lines} lines")
    print(f"commands: {args.torchfix} FILES  |  {' '.join(vramlens_cmd())} lint FILES")

    # Two ways vramlens runs: "cold" reads every module the files import (``--no-cache``: a first run, or a changed
    # engine); "warm" reads the summaries an earlier run kept on disk (lint/project/store.py), as a second run does.
    # The warm runs keep their summaries in a folder of their own, written by the warm-up run.
    with tempfile.TemporaryDirectory(prefix="vramlens-bench-cache-") as cache:
        warm_env = {**_ENV, "VRAMLENS_CACHE_DIR": cache}
        timed([args.torchfix, paths[0]])  # warm-up: bytecode written, file caches filled
        timed(vramlens_cmd() + ["lint", "--no-cache", paths[0]])
        timed(vramlens_cmd() + ["lint", *paths], warm_env)  # writes the summaries the warm runs read
        tf_times, cold_times, warm_times = [], [], []
        for rep in range(args.reps):
            tf_times.append(timed([args.torchfix, *paths]))
            cold_times.append(timed(vramlens_cmd() + ["lint", "--no-cache", *paths]))
            warm_times.append(timed(vramlens_cmd() + ["lint", *paths], warm_env))
            print(f"  rep {rep + 1}: torchfix {tf_times[-1]:8.2f} s   vramlens cold {cold_times[-1]:7.3f} s   "
                  f"warm {warm_times[-1]:7.3f} s")
    tf = statistics.median(tf_times)
    print(f"median: torchfix {tf:.2f} s ({lines / tf:,.0f} lines/s)")
    for how, times in (("cold (--no-cache)", cold_times), ("warm (summaries kept)", warm_times)):
        vl = statistics.median(times)
        print(f"  vramlens {how}: {vl:.3f} s ({lines / vl:,.0f} lines/s), {tf / vl:.1f}x faster than torchfix")

    target = min(every, key=lambda p: abs(count_lines([p]) - 2000))
    text = target.read_text(encoding="utf-8")
    n_lines = count_lines([target])
    name, run = in_process_linter()
    if run is None:
        cmd = vramlens_cmd() + ["lint", str(target)]
        times = [timed(cmd) for _ in range(args.single_runs)]
        how = "CLI (no in-process API found)"
    else:
        run(target, text)  # warm-up: imports, caches
        times = []
        for _ in range(args.single_runs):
            start = time.perf_counter()
            run(target, text)
            times.append(time.perf_counter() - start)
        how = f"in-process vramlens.lint.{name}"
    print(f"one file: {target.relative_to(root)} ({n_lines} lines), {how}, {args.single_runs} runs: "
          f"median {statistics.median(times) * 1000:.1f} ms, min {min(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
