"""Dry run only: imitates a workload's memory behaviour on the stand-in torch's pretend 8 GiB device.

record.py --dry-run puts this file in place of every workload script, with `<script>.standin.json`
beside it saying how the workload behaves and which of its arguments scale it. It accepts the
workload's own command line (`--flag V` and nanoGPT's `--flag=V`), so the driver's commands,
calibration, confirming runs, ground truth and packing run exactly as on the GPU. It proves the
orchestration, never a diagnosis: sizes are made up, and memory outside PyTorch cannot be imitated.
"""

import json
import os
import sys
from pathlib import Path

import torch

MIB = 2**20


def pairs(args: list[str]) -> set[tuple[str, str]]:
    """The (flag, value) pairs of a command line, from `--flag V` and `--flag=V`."""
    found = set()
    for index, arg in enumerate(args):
        if arg.startswith("--") and "=" in arg:
            found.add(tuple(arg.split("=", 1)))
        elif arg.startswith("--") and index + 1 < len(args) and not args[index + 1].startswith("--"):
            found.add((arg, args[index + 1]))
    return found


def spec_of_this_run() -> dict:
    """The spec of the case whose arguments this command line shares most (cases may share a script)."""
    choices = json.loads(Path(__file__).with_suffix(".standin.json").read_text())["choices"]
    given = pairs(sys.argv[1:])
    return max(choices, key=lambda choice: len(pairs(choice["args"]) & given))["spec"]


SPEC = spec_of_this_run()


def value_of(flag: str, default: str | None = None) -> str | None:
    argv = sys.argv[1:]
    for index, arg in enumerate(argv):
        if arg == flag and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return default


def scale() -> float:
    knob = SPEC.get("scale")
    if not knob:
        return 1.0
    return float(value_of(knob["flag"], str(knob["reference"]))) / max(float(knob["reference"]), 1.0)


def steps() -> int:
    knob = SPEC.get("steps")
    return int(float(value_of(knob["flag"], str(knob["reference"])))) if knob else 3


def fixed() -> bool:
    fix = SPEC.get("fix")
    return bool(fix) and value_of(fix["flag"]) == fix["value"]


def progress(step: int) -> None:
    print(f"iter {step}: loss 1.0" if SPEC.get("nanogpt") else f"[progress] step {step + 1} done", flush=True)


def main() -> None:
    behaviour, size = SPEC["behaviour"], scale()
    expandable = "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    reference_steps = float(SPEC["steps"]["reference"]) if SPEC.get("steps") else 3.0
    weights = torch.empty(64 * MIB)  # initialises the pretend device, and with it the cap
    capped = torch.cuda._state["fraction"] < 1.0  # it has no cache to split: imitate the split under a cap
    kept = []
    if behaviour == "outside" and not fixed():
        kept.append(torch.empty(int(0.75 * torch.cuda.TOTAL)))  # the other library's share, held through torch here
    for step in range(steps()):
        if behaviour in ("first_step", "fragmentation", "outside"):
            work = int((0.5 if fixed() else 1.0) * size * 1536 * MIB)
            split = behaviour == "fragmentation" and capped and not expandable
            waste = torch.empty(int(0.3 * work)) if split else None
            activations = torch.empty(work)
            del activations, waste
        elif behaviour == "growth":
            if not fixed():
                kept.append(torch.empty(int(size * 3072 * MIB / reference_steps)))  # 3 GiB over the whole run
            temporary = torch.empty(int(size * 128 * MIB))
            del temporary
        elif behaviour == "cached":
            temporary = torch.empty(int(size * 512 * MIB))
            del temporary
        else:  # healthy, healthy_after_fix
            temporary = torch.empty(int(size * 64 * MIB))
            del temporary
        progress(step)
    del weights
    print("stand-in finished", flush=True)


if __name__ == "__main__":
    main()
