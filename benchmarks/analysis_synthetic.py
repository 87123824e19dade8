"""Time `vramlens analyze` against a bare `pickle.load` on a synthetic 1,000,000-entry snapshot.

The snapshot is hand-built for local timing only (its numbers mean nothing): a training loop
whose frames look like torch's — frame dicts shared between entries, one frames list per
allocation, alloc / free_requested / free_completed triples, a slow leak, an OOM at the end.
Usage: python benchmarks/analysis_synthetic.py [ENTRIES] [--keep FILE]
"""

from __future__ import annotations

import gc
import os
import pickle
import random
import resource
import sys
import tempfile
import time

MIB = 1024 * 1024
ROOT = "/srv/app"
SITE = "/opt/conda/lib/python3.12/site-packages"


def _frame(filename: str, line: int, name: str) -> dict:
    return {"filename": filename, "line": line, "name": name}


def build_snapshot(entries: int = 1_000_000, seed: int = 0) -> dict:
    rng = random.Random(seed)
    # Shaped like benchmarks/record_million.py: nested nn.Sequential forward (user frame 10 deep),
    # frameless backward allocations, and Adam's step.
    module_call = [_frame(f"{SITE}/torch/nn/modules/module.py", 1790, "_call_impl"),
                   _frame(f"{SITE}/torch/nn/modules/module.py", 1779, "_wrapped_call_impl")]
    container = _frame(f"{SITE}/torch/nn/modules/container.py", 253, "forward")
    outer = [_frame(f"{ROOT}/train.py", 95, "<module>")]
    forward_line = _frame(f"{ROOT}/train.py", 42, "<module>")
    stacks = []
    for op in (_frame(f"{SITE}/torch/nn/modules/linear.py", 134, "forward"),
               _frame(f"{SITE}/torch/nn/modules/activation.py", 734, "forward")):
        stacks.append([op, *module_call, container, *module_call, container, *module_call, forward_line, *outer])
    stacks.append([])  # the autograd engine's allocations carry no Python frame
    stacks.append([])
    stacks.append([_frame(f"{SITE}/torch/optim/adam.py", 402, "_single_tensor_adam"),
                   _frame(f"{SITE}/torch/optim/adam.py", 238, "step"),
                   _frame(f"{SITE}/torch/optim/optimizer.py", 81, "_use_grad"),
                   _frame(f"{SITE}/torch/optim/optimizer.py", 533, "wrapper"),
                   _frame(f"{ROOT}/train.py", 45, "<module>"), *outer])
    leak_stack = [_frame(f"{ROOT}/train.py", 47, "<module>"), *outer]
    sizes = [4 * MIB, 8 * MIB, 512 * 1024, 16 * MIB, 2048, 65536]
    trace: list[dict] = []
    live: list[tuple[int, int, list]] = []  # a training step's working set, freed oldest first
    kept: list[tuple[int, int, list]] = []  # the slow leak
    next_addr = 0x7F0000000000
    time_us = 1_700_000_000_000_000
    trace.append({"action": "segment_alloc", "addr": next_addr, "size": 64 * 1024**3, "stream": 0, "frames": [], "time_us": time_us})
    while len(trace) < entries - 1:
        time_us += rng.randint(1, 20)
        if len(live) < 200 and rng.random() < 0.6:
            leak = rng.random() < 0.005
            frames = list(leak_stack if leak else rng.choice(stacks))  # one list per traceback, shared frame dicts
            size = rng.choice(sizes)
            trace.append({"action": "alloc", "addr": next_addr, "size": size, "stream": 0, "frames": frames, "time_us": time_us})
            (kept if leak else live).append((next_addr, size, frames))
            next_addr += size
        elif live:
            addr, size, frames = live.pop(rng.randrange(min(len(live), 8)))
            for action in ("free_requested", "free_completed"):
                trace.append({"action": action, "addr": addr, "size": size, "stream": 0, "frames": frames, "time_us": time_us})
    live += kept
    trace.append({"action": "oom", "addr": 0, "size": 2 * 1024**3, "device_free": 100 * MIB, "stream": 0, "frames": [], "time_us": time_us})
    blocks = [{"address": addr, "size": size, "requested_size": size, "state": "active_allocated", "frames": frames}
              for addr, size, frames in live]
    segment = {"device": 0, "address": 0x7F0000000000, "total_size": 64 * 1024**3, "allocated_size": sum(b["size"] for b in blocks),
               "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
               "is_expandable": False, "frames": [], "blocks": blocks}
    return {"segments": [segment], "device_traces": [trace], "allocator_settings": {}, "external_annotations": []}


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    entries = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 1_000_000
    keep = sys.argv[sys.argv.index("--keep") + 1] if "--keep" in sys.argv else None
    path = keep or os.path.join(tempfile.mkdtemp(), "synthetic.pickle")
    if not os.path.exists(path):
        snapshot = build_snapshot(entries)
        with open(path, "wb") as out:
            pickle.dump(snapshot, out, protocol=4)
        del snapshot
        gc.collect()
    print(f"snapshot: {os.path.getsize(path) / MIB:.1f} MiB, {entries} entries")
    # Each measurement runs in a fresh process so peak memory is its own.
    for mode in ("load", "analyze"):
        pid = os.fork()
        if pid == 0:
            start = time.perf_counter()
            if mode == "load":
                with open(path, "rb") as handle:
                    pickle.load(handle)
                extra = ""
            else:
                from vramlens.analysis import analyze_capture
                from vramlens.capture import load_capture

                capture = load_capture(path)
                loaded = time.perf_counter()
                analyze_capture(capture, total_memory=80 * 1024**3)
                extra = f"   (safe load {loaded - start:.2f} s + analysis {time.perf_counter() - loaded:.2f} s)"
            print(f"{mode:8s} {time.perf_counter() - start:6.2f} s   peak RSS {_peak_rss_mib():7.0f} MiB{extra}", flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
    if not keep:
        os.unlink(path)


if __name__ == "__main__":
    main()
