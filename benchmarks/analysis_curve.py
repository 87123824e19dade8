"""The analysis' cost against a bare `pickle.load`, over snapshot size, stack depth and stack kind.

    python benchmarks/analysis_curve.py [--entries 1000000,3000000,10000000] [--depths shallow,deep]
        [--stacks python,all] [--rounds 3] [--rounds-from-10m 1] [--keep DIR]
    python benchmarks/analysis_curve.py --snapshot FILE [--snapshot FILE ...] [--rounds 3]

Each snapshot is made by benchmarks/analysis_snapshots.py (shaped like the recorded nanoGPT captures:
shared frame dicts, a frames list per entry, --stacks all's C++ frames, alloc / free_requested /
free_completed / segment events, steps). For each one, three programs run in fresh interpreters,
alternating within every round (``--snapshot``: the given files instead, e.g. a
recorded capture's snapshot.pickle or analysis_synthetic.py's older shape): a bare ``pickle.load`` of the file, ``analyze_path`` (the restricted
load, the shape check and the whole analysis, as the editor runs it) and the ``vramlens analyze`` command
(the same, plus its start-up and the text it prints). Medians of wall time, CPU time (user + system) and
peak RSS, side by side with their ratio to the bare load. On a shared machine wall time follows the
other jobs and CPU time much less, so both are shown, with the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(os.path.dirname(HERE), "server")
TOTAL = "80GiB"
VARIANTS = {
    "pickle.load": [sys.executable, "-c", "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))"],
    "analyze_path": [sys.executable, "-c", "import sys; from vramlens.analysis.pipeline import analyze_path; "
                     f"analyze_path(sys.argv[1], total_memory=80 << 30)"],
    "vramlens analyze": [sys.executable, "-m", "vramlens", "analyze", "--total-memory", TOTAL],
}


def measure(command: list[str], path: str, env: dict) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak RSS bytes of one fresh interpreter."""
    start = time.perf_counter()
    child = subprocess.Popen(command + [path], stdout=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"failed ({status}): {' '.join(command)} {path}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def snapshot(folder: str, entries: int, depth: str, stacks: str) -> str:
    path = os.path.join(folder, f"synthetic-{entries}-{depth}-{stacks}.pickle")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(HERE, "analysis_snapshots.py"), str(entries), path + ".part",
                        "--depth", depth, "--stacks", stacks], check=True)
        os.replace(path + ".part", path)
    return path


def compare(path: str, label: str, rounds: int, env: dict) -> None:
    """Print the medians of every variant on ``path``, each beside its ratio to the bare load."""
    runs = {name: [] for name in VARIANTS}
    for _ in range(rounds):
        for name, command in VARIANTS.items():
            runs[name].append(measure(command, path, env))
    base = [statistics.median(column) for column in zip(*runs["pickle.load"])]
    for name, measured in runs.items():
        wall, cpu, peak = (statistics.median(column) for column in zip(*measured))
        print(f"{label} {os.path.getsize(path) / 2**20:>6.0f} | {name:<16} {wall:>7.2f} {wall / base[0]:>5.2f} "
              f"{cpu:>7.2f} {cpu / base[1]:>5.2f} {peak / 2**20:>9.0f} {peak / base[2]:>5.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", default="1000000,3000000,10000000")
    parser.add_argument("--depths", default="shallow,deep")
    parser.add_argument("--stacks", default="python,all")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rounds-from-10m", type=int, default=1, help="rounds for snapshots of 10M entries or more")
    parser.add_argument("--keep", help="folder that keeps the generated snapshots between runs")
    parser.add_argument("--snapshot", action="append", help="measure this snapshot file instead (repeatable)")
    args = parser.parse_args()
    folder = args.keep or tempfile.mkdtemp(prefix="vramlens-curve-")
    os.makedirs(folder, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=SERVER)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cache = tempfile.TemporaryDirectory(prefix="vramlens-bench-pycache-")  # bytecode as an installed package has it
    env["PYTHONPYCACHEPREFIX"] = cache.name
    subprocess.run([sys.executable, "-c", "import vramlens.cli, vramlens.analysis.pipeline"], env=env, check=True)

    load_before = os.getloadavg()
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cores; {memory / 2**30:.0f} GiB memory")
    header = (f"{'entries':>10} {'depth':<7} {'stacks':<6} {'MiB':>6} | {'variant':<16} {'wall s':>7} {'x':>5} "
              f"{'CPU s':>7} {'x':>5} {'peak MiB':>9} {'x':>5}")
    print(header)
    if args.snapshot:
        for path in args.snapshot:
            compare(path, f"{os.path.basename(path)[-25:]:>25}", args.rounds, env)
    else:
        for entries in map(int, args.entries.split(",")):
            for depth in args.depths.split(","):
                for stacks in args.stacks.split(","):
                    path = snapshot(folder, entries, depth, stacks)
                    rounds = args.rounds_from_10m if entries >= 10_000_000 else args.rounds
                    compare(path, f"{entries:>10} {depth:<7} {stacks:<6}", rounds, env)
                    if not args.keep:
                        os.unlink(path)
    load_after = os.getloadavg()
    print("load average (1, 5, 15 min): before " + ", ".join(f"{x:.2f}" for x in load_before)
          + "; after " + ", ".join(f"{x:.2f}" for x in load_after))


if __name__ == "__main__":
    main()
