"""Census time against the number of live Python objects.

    python benchmarks/census_time.py                    # CPU tensors, take_census called directly
    python benchmarks/census_time.py --device cuda      # CUDA tensors (a GPU machine)
    python benchmarks/census_time.py --at-oom           # under `vramlens run`, the census the OOM observer takes

Each size runs in a fresh interpreter: a training setup (an MLP stack with AdamW after one step,
a list of 138 kept outputs in a global, a batch in a local) plus N extra live objects (dicts,
lists and small objects, as a process' own data), then the census. Two cases: "named" (every
tensor is reached from a named root, the usual case) and "cycle" (one more tensor is held only
by a reference cycle, so the holder search walks every root and then asks gc.get_referrers).
Prints one line per size and case: objects the garbage collector tracked, the census' duration
(median of the repeats; at the OOM a single census per run) and whether it completed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from harness import paths

SERVER = str(paths.SERVER)
SIZES = (10_000, 100_000, 1_000_000)


class Record:
    def __init__(self, index):
        self.index = index
        self.tags = [index]


def crowd(count: int) -> list:
    """``count`` tracked objects: a third dicts, a third lists, a third small objects."""
    third = count // 3
    return [{"i": i} for i in range(third)] + [[i] for i in range(third)] + [Record(i) for i in range(count - 2 * third)]


def build(torch, device: str):
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(8)]).to(device)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(64, 256, device=device)).pow(2).mean().backward()
    optimizer.step()
    kept = [torch.randn(64, 256, device=device) for _ in range(138)]
    return model, optimizer, kept


def child(args) -> None:  # run_child gives it PYTHONPATH=server: vramlens need not be installed there
    import torch

    from vramlens.agent.census import take_census

    gc.disable()  # the cycle below must still be there when the census looks
    state = {"model_and_more": build(torch, args.device), "crowd": crowd(args.objects)}
    if args.case == "cycle":
        cycle = [torch.randn(1024, device=args.device)]
        cycle.append(cycle)
        del cycle
    batch = torch.randn(64, 256, device=args.device)  # a local of the running code
    if args.oom:
        torch.empty(1 << 40, dtype=torch.uint8, device=args.device)  # the census at the OOM: see the capture
        return
    accept = (lambda t: t.is_cuda) if args.device == "cuda" else (lambda t: t.device.type == "cpu")
    durations, cpu, last = [], [], None
    for _ in range(args.repeats):
        started = time.process_time()
        last = take_census(torch, "on_demand", device_filter=accept)
        cpu.append(time.process_time() - started)
        durations.append(last["duration_s"])
    print(json.dumps({"objects": last["objects_scanned"], "seconds": statistics.median(durations),
                      "cpu": statistics.median(cpu), "complete": last["complete"], "search": last.get("holder_search")}))
    del state, batch


def run_child(args, objects: int, case: str) -> dict:
    command = [sys.executable, os.path.abspath(__file__), "--child", "--objects", str(objects), "--case", case,
               "--device", args.device, "--repeats", str(args.repeats)]
    env = dict(os.environ, PYTHONPATH=SERVER)
    if not args.at_oom:
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])
    with tempfile.TemporaryDirectory() as folder:
        capture = os.path.join(folder, "cap")
        subprocess.run([sys.executable, "-m", "vramlens", "run", "--memory-limit", "8GiB", "-o", capture,
                        *command[1:], "--oom"], capture_output=True, text=True, env=env)
        with open(os.path.join(capture, "census.json")) as census_file:
            census = json.load(census_file)
    return {"objects": census["objects_scanned"], "seconds": census["duration_s"], "cpu": None,
            "complete": census["complete"], "search": census.get("holder_search")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--at-oom", action="store_true", help="the census the OOM observer takes (needs a GPU)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--objects", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--case", default="named", help=argparse.SUPPRESS)
    parser.add_argument("--oom", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if args.at_oom:
        args.device = "cuda"
    where = "at the OOM, under vramlens run" if args.at_oom else f"take_census, {args.device} tensors"
    print(f"census time ({where}); python {sys.version.split()[0]}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("added_objects  objects_scanned  case    wall_s  cpu_s  complete  holder search (reached by walk / referrers / not)")
    for objects in args.sizes:
        for case in ("named", "cycle"):
            found = run_child(args, objects, case)
            search = found["search"] or {}
            cpu = f"{found['cpu']:.3f}" if found["cpu"] is not None else "  -  "
            print(f"{objects:>13,}  {found['objects']:>15,}  {case:<6}  {found['seconds']:>6.3f}  {cpu}  "
                  f"{str(found['complete']):<8}  {search.get('reached_by_walk')} / {search.get('reached_by_referrers')} / "
                  f"{search.get('not_reached')}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
