"""Analysis time and peak memory on a real snapshot, against a bare pickle.load of the same file
and against PyTorch's own `torch.cuda._memory_viz.trace`, side by side in one run.

    python benchmarks/analysis_vs_load.py SNAPSHOT.pickle|CAPTURE_FOLDER [--rounds 5] [--total-memory BYTES]
        [--baseline-server DIR]

Each measurement runs in a fresh interpreter (so peak RSS and CPU time are its own), the variants
alternate within every round, and medians are printed: wall time, CPU time (user + system of the
child) and peak RSS. On a shared machine wall time follows the other jobs; CPU time much less, so
both are shown, with the load average before and after. `vramlens` = restricted load + the whole
analysis (replay, attribution, accounting, diagnosis) without printing; `vramlens` command = the
whole `vramlens analyze PATH`, start-up and printed text included (and `--json`: the JSON printed).

Given a capture folder, the analysis reads the whole folder (capture.json, censuses, snapshot) and
the bare load unpickles the folder's snapshot.pickle. --baseline-server DIR (a `server/` folder of
another checkout) adds both vramlens variants run from that copy, alternating with this one's: a
before/after in the same rounds.

The children read and write bytecode in a private cache (a temporary folder, never the checkout)
that a warm-up run fills, as an installed package has its .pyc files: with PYTHONDONTWRITEBYTECODE
set, every run would compile the package from source again. --no-bytecode-cache measures that case.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

VARIANTS = {
    "pickle.load": "import pickle; pickle.load(open(SNAPSHOT, 'rb'))",
    "vramlens analyze": "from vramlens.analysis.pipeline import analyze_path; analyze_path(PATH, total_memory=TOTAL)",
    "vramlens command": "from vramlens.cli import main; main(['analyze', PATH] + (['--total-memory', str(TOTAL)] if TOTAL else []))",
    "vramlens command --json": "from vramlens.cli import main; main(['analyze', '--json', PATH] + (['--total-memory', str(TOTAL)] if TOTAL else []))",
    "_memory_viz.trace": "import pickle; from torch.cuda import _memory_viz; _memory_viz.trace(pickle.load(open(SNAPSHOT, 'rb')))",
}
WARM_UP = {"vramlens analyze": "import vramlens.analysis.pipeline", "vramlens command": "import vramlens.cli.analyze",
           "vramlens command --json": "import vramlens.cli.analyze",
           "_memory_viz.trace": "from torch.cuda import _memory_viz"}
BASELINE = " (baseline)"
CHILD_ENV = dict(os.environ)


def measure(code: str, path: str, total: int | None, env: dict | None = None) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak RSS bytes of one fresh interpreter running ``code``."""
    snapshot = os.path.join(path, "snapshot.pickle") if os.path.isdir(path) else path
    program = f"PATH = {path!r}; SNAPSHOT = {snapshot!r}; TOTAL = {total!r}\n{code}"
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.DEVNULL, env=env or CHILD_ENV)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"variant failed: {code}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("snapshot", help="a snapshot pickle or a capture folder")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--total-memory", type=int)
    parser.add_argument("--skip-torch", action="store_true", help="leave out _memory_viz.trace (no torch here)")
    parser.add_argument("--no-bytecode-cache", action="store_true", help="keep the environment's bytecode settings")
    parser.add_argument("--baseline-server", metavar="DIR", help="also run the vramlens variants from this server/ folder")
    args = parser.parse_args()
    variants = {k: v for k, v in VARIANTS.items() if not (args.skip_torch and "torch" in v)}
    envs = {name: CHILD_ENV for name in variants}
    if not args.no_bytecode_cache:
        CHILD_ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        cache = tempfile.TemporaryDirectory(prefix="vramlens-bench-pycache-")  # removed when main returns
        CHILD_ENV["PYTHONPYCACHEPREFIX"] = cache.name
    if args.baseline_server:
        baseline_env = dict(CHILD_ENV, PYTHONPATH=os.path.abspath(args.baseline_server))
        for name in [name for name in variants if name.startswith("vramlens")]:
            variants[name + BASELINE] = variants[name]
            envs[name + BASELINE] = baseline_env
    if not args.no_bytecode_cache:
        for name in variants:
            if name.removesuffix(BASELINE) in WARM_UP:
                measure(WARM_UP[name.removesuffix(BASELINE)], args.snapshot, None, envs[name])
    times = {name: [] for name in variants}
    cpus = {name: [] for name in variants}
    peaks = {name: [] for name in variants}
    load_before = os.getloadavg()
    baseline = measure("pass", args.snapshot, None)  # interpreter start-up alone
    for _ in range(args.rounds):
        for name, code in variants.items():
            elapsed, cpu, peak = measure(code, args.snapshot, args.total_memory, envs[name])
            times[name].append(elapsed)
            cpus[name].append(cpu)
            peaks[name].append(peak)
    load_after = os.getloadavg()
    folder = os.path.isdir(args.snapshot)
    size = os.path.getsize(os.path.join(args.snapshot, "snapshot.pickle") if folder else args.snapshot)
    print(f"{'capture folder' if folder else 'snapshot'} {args.snapshot}: {size / 2**20:.1f} MiB of snapshot; {args.rounds} rounds; python {sys.version.split()[0]}; {os.cpu_count()} cores")
    print("bytecode: " + ("as the environment says" if args.no_bytecode_cache else f"cached in {CHILD_ENV['PYTHONPYCACHEPREFIX']}"))
    print(f"interpreter start-up alone: {baseline[0]:.3f} s wall, {baseline[1]:.3f} s CPU, {baseline[2] / 2**20:.0f} MiB")
    print("load average (1, 5, 15 min): before " + ", ".join(f"{x:.2f}" for x in load_before)
          + "; after " + ", ".join(f"{x:.2f}" for x in load_after))
    load_time = statistics.median(times["pickle.load"])
    load_cpu = statistics.median(cpus["pickle.load"])
    load_peak = statistics.median(peaks["pickle.load"])
    print(f"{'variant':<36} {'wall s':>7} {'x load':>7} {'CPU s':>7} {'x load':>7} {'peak MiB':>9} {'x load':>7}")
    for name in variants:
        t, c, p = statistics.median(times[name]), statistics.median(cpus[name]), statistics.median(peaks[name])
        print(f"{name:<36} {t:>7.3f} {t / load_time:>7.2f} {c:>7.3f} {c / load_cpu:>7.2f} "
              f"{p / 2**20:>9.0f} {p / load_peak:>7.2f}")


if __name__ == "__main__":
    main()
