"""The compatibility matrix: each program of workloads/compat run bare and under `vramlens run`
(census on, and --no-census), compared on exit code, the program's own output (its `step_ms` lines
aside), new stderr lines, and the median step time (run on a CUDA machine).

    python benchmarks/compat_matrix.py [--lanes 4] [--only NAME,…] [--timing-repeats 0] [--json OUT]
Correctness runs go in parallel lanes (one row's three runs in one lane). With --timing-repeats N,
the overhead is then measured sequentially on the idle GPU: bare and recorded alternated N times
per row, each median of steps; the figure is the ratio of the medians of those medians.
`vramlens` is `python -m vramlens` with server/ on PYTHONPATH (or VRAMLENS_SERVER).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PROGRAMS = os.path.join(ROOT, "workloads", "compat")
SERVER = os.environ.get("VRAMLENS_SERVER", os.path.join(ROOT, "server"))
STEP = re.compile(r"^(?:\[rank\d+\]:\s*)?step_ms ([0-9.]+)\s*$")
OURS = re.compile(r"^(?:\[rank\d+\]:\s*)?vramlens: ")
NUMBERS = re.compile(r"0x[0-9a-f]+|\d+(?:\.\d+)?")
TIMEOUT_S = 240

# name: (program, arguments, launcher)
ROWS = {
    "hf_bert_gc (non-reentrant)": ("hf_bert_gc.py", [], "python"),
    "hf_bert_gc (reentrant)": ("hf_bert_gc.py", ["--reentrant"], "python"),
    "hf_trainer_gc (non-reentrant)": ("hf_trainer_gc.py", [], "python"),
    "hf_trainer_gc (reentrant)": ("hf_trainer_gc.py", ["--reentrant"], "python"),
    "accelerate accumulation bf16": ("accelerate_accum.py", [], "python"),
    "lightning fit bf16-mixed": ("lightning_bf16.py", [], "python"),
    "torch.compile default": ("compile_modes.py", [], "python"),
    "torch.compile reduce-overhead": ("compile_modes.py", ["--mode", "reduce-overhead"], "python"),
    "torch.utils.checkpoint (non-reentrant)": ("checkpoint_loop.py", [], "python"),
    "torch.utils.checkpoint (reentrant)": ("checkpoint_loop.py", ["--reentrant"], "python"),
    "AMP + GradScaler": ("amp_scaler.py", [], "python"),
    "DataLoader workers + pin_memory": ("dataloader_workers.py", [], "python"),
    "thread pool feeding the GPU": ("thread_pool.py", [], "python"),
    "CuPy + JAX in process": ("cupy_jax.py", [], "python"),
    "torchrun 2 ranks, gloo": ("torchrun_gloo.py", [], "torchrun"),
    "torch.cuda graphs": ("cuda_graphs.py", [], "python"),
    "streams and events": ("streams_events.py", [], "python"),
    "channels_last + cudnn.benchmark": ("channels_last_cudnn.py", [], "python"),
}
MODES = ("bare", "census", "no-census")
# torch's recorder without VRAM Lens: the context `vramlens run` uses (stacks at allocations), and none at all
RECORDER_ONLY = {"torch-recorder": "alloc", "torch-recorder-no-stacks": None}


def command(row: tuple, mode: str, capture: str) -> list[str]:
    program, arguments, launcher = row
    path = os.path.join(PROGRAMS, program)
    if mode in RECORDER_ONLY:
        # torch's own recorder alone, set as `vramlens run` sets it (or with no stacks): what of the overhead is its
        setup = ("import runpy, sys, torch; torch.cuda.init(); torch.cuda.memory._record_memory_history("
                 f"enabled='all', context={RECORDER_ONLY[mode]!r}, stacks='python', max_entries=1_000_000); "
                 "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
        return [sys.executable, "-c", setup, path, *arguments]
    if mode == "bare":
        if launcher == "torchrun":
            return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", path, *arguments]
        return [sys.executable, path, *arguments]
    ours = [sys.executable, "-m", "vramlens", "run", "-o", capture] + (["--no-census"] if mode == "no-census" else [])
    if launcher == "torchrun":
        return ours + ["--torchrun", "--nproc-per-node", "2", path, *arguments]
    return ours + [path, *arguments]


def run_once(row: tuple, mode: str) -> dict:
    folder = tempfile.mkdtemp(prefix="compat-")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [SERVER, os.environ.get("PYTHONPATH")])),
               PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false")
    began = time.monotonic()
    try:
        done = subprocess.run(command(row, mode, os.path.join(folder, "capture")), capture_output=True, text=True,
                              timeout=TIMEOUT_S, cwd=folder, env=env)
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        code, out, err = "timeout", (expired.stdout or b"").decode(errors="replace"), (expired.stderr or b"").decode(errors="replace")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    steps = [float(m.group(1)) for m in map(STEP.match, out.splitlines()) if m]
    output = sorted(line for line in out.splitlines() if not STEP.match(line) and not OURS.match(line))
    errors = {NUMBERS.sub("N", line.strip()) for line in err.splitlines() if line.strip() and not OURS.match(line)}
    return {"exit": code, "output": output, "stderr": errors, "steps": steps, "wall_s": time.monotonic() - began,
            "stderr_tail": err.strip().splitlines()[-3:]}


def compare_row(name: str) -> dict:
    runs = {mode: run_once(ROWS[name], mode) for mode in MODES}
    bare = runs["bare"]
    result = {"row": name, "exit": {mode: run["exit"] for mode, run in runs.items()}}
    for mode in MODES[1:]:
        run = runs[mode]
        result[mode] = {
            "same_exit": run["exit"] == bare["exit"],
            "same_output": run["output"] == bare["output"],
            "new_stderr": sorted(run["stderr"] - bare["stderr"])[:5],
            "median_ms": statistics.median(run["steps"]) if run["steps"] else None,
            "tail": run["stderr_tail"] if run["exit"] != bare["exit"] else [],
            "output_diff": sorted(set(run["output"]) ^ set(bare["output"]))[:6],
        }
    result["bare_median_ms"] = statistics.median(bare["steps"]) if bare["steps"] else None
    result["bare_tail"] = bare["stderr_tail"] if bare["exit"] != 0 else []
    result["match"] = all(result[m]["same_exit"] and result[m]["same_output"] and not result[m]["new_stderr"]
                          for m in MODES[1:])
    print(f"{name}: {'match' if result['match'] else 'DIFFERS'} {result['exit']}", flush=True)
    return result


def timing(name: str, repeats: int, modes: tuple[str, ...] = ("bare", "census")) -> dict:
    medians = {mode: [] for mode in modes}
    for _ in range(repeats):
        for mode in medians:
            steps = run_once(ROWS[name], mode)["steps"]
            if steps:
                medians[mode].append(statistics.median(steps))
    if not medians["bare"] or not medians["census"]:
        return {"row": name, "overhead": None}
    bare, ours = statistics.median(medians["bare"]), statistics.median(medians["census"])
    others = {mode: statistics.median(values) for mode, values in medians.items() if values and mode not in ("bare", "census")}
    extra = "".join(f", {mode} {value:.3f} ms ({value / bare - 1:+.1%})" for mode, value in others.items())
    print(f"timing {name}: bare {bare:.3f} ms, recorded {ours:.3f} ms ({ours / bare - 1:+.1%}){extra}", flush=True)
    return {"row": name, "bare_ms": bare, "recorded_ms": ours, "overhead": ours / bare - 1, "medians": medians,
            "other_modes_ms": others}


def table(results: list[dict], timings: dict) -> str:
    lines = ["| program | exit (bare / census / no-census) | output | new stderr lines | bare step | recorded step | overhead |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        t = timings.get(r["row"]) or {}
        bare_ms = t.get("bare_ms", r["bare_median_ms"])
        ours_ms = t.get("recorded_ms", r["census"]["median_ms"])
        overhead = t.get("overhead")
        same = "same" if r["census"]["same_output"] and r["no-census"]["same_output"] else "DIFFERS"
        new = len(r["census"]["new_stderr"]) + len(r["no-census"]["new_stderr"])
        exits = " / ".join(str(r["exit"][m]) for m in MODES)
        lines.append(f"| {r['row']} | {exits} | {same} | {new or 'none'} | "
                     f"{'' if bare_ms is None else f'{bare_ms:.2f} ms'} | {'' if ours_ms is None else f'{ours_ms:.2f} ms'} | "
                     f"{'' if overhead is None else f'{overhead:+.1%}'} |")
    return "\n".join(lines)


def timing_table(timings: dict) -> str:
    lines = ["| program | bare step (median) | recorded step (median) | overhead |", "|---|---|---|---|"]
    for name, t in timings.items():
        if t.get("overhead") is None:
            lines.append(f"| {name} | | | no step times |")
            continue
        lines.append(f"| {name} | {t['bare_ms']:.2f} ms | {t['recorded_ms']:.2f} ms | {t['overhead']:+.1%} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lanes", type=int, default=4)
    parser.add_argument("--only", help="comma-separated row names (substrings)")
    parser.add_argument("--timing-repeats", type=int, default=0)
    parser.add_argument("--timing-only", help="comma-separated row substrings to time (default: all chosen rows)")
    parser.add_argument("--timing-modes", default="bare,census",
                        help="modes timed side by side: bare, census, no-census, torch-recorder, torch-recorder-no-stacks")
    parser.add_argument("--no-compare", action="store_true", help="only the timing (sequential)")
    parser.add_argument("--json")
    args = parser.parse_args()
    names = [n for n in ROWS if not args.only or any(part in n for part in args.only.split(","))]
    results = []
    if not args.no_compare:
        with ThreadPoolExecutor(args.lanes) as pool:
            results = list(pool.map(compare_row, names))
    timings = {}
    if args.timing_repeats:
        chosen = [n for n in names if not args.timing_only or any(p in n for p in args.timing_only.split(","))]
        modes = tuple(args.timing_modes.split(","))
        timings = {n: timing(n, args.timing_repeats, modes) for n in chosen}
    print(table(results, timings) if results else timing_table(timings))
    for r in results:
        if not r["match"]:
            print(json.dumps(r, default=sorted)[:2000])
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"rows": results, "timings": timings}, out, indent=1, default=sorted)
    return 0 if all(r["match"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
