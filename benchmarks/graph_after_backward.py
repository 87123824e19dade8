"""What a loss kept after its own backward still holds: the figures behind retained-graph's wording.

    python benchmarks/graph_after_backward.py [--steps 400] [--layers 12]

A 12-layer transformer encoder (width 64, on the CPU) trains for ``--steps`` steps; every step keeps its loss
after ``loss.backward()`` (as ``losses.append(loss)`` does), as a Python number (``loss.item()``) or, for
comparison, before a backward that retains the graph. Each way runs in a fresh interpreter with glibc's mmap
threshold at 64 KiB, so freed tensors go back to the system and the resident size follows what is alive.
Printed: the growth of resident memory per step after a warm-up, median of ``--rounds`` runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

WAYS = ("item", "tensor after backward", "tensor with retain_graph")

_PROGRAM = r"""
import os, sys, torch
torch.manual_seed(0)
way, steps, layers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
block = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
model = torch.nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(2, 16, 64)
kept = []

def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

warm = steps // 8
for step in range(steps):
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward(retain_graph=way == "tensor with retain_graph")
    optimizer.step()
    kept.append(loss.item() if way == "item" else loss)
    if step == warm:
        base = resident()
print((resident() - base) / (steps - warm - 1))
"""


def per_step(way: str, steps: int, layers: int) -> float:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", PYTHONWARNINGS="ignore")
    out = subprocess.run([sys.executable, "-c", _PROGRAM, way, str(steps), str(layers)], env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.layers}-layer encoder, {args.steps} steps, median of {args.rounds} runs: resident memory per step")
    for way in WAYS:
        figures = [per_step(way, args.steps, args.layers) for _ in range(args.rounds)]
        print(f"  {way:<26} {statistics.median(figures) / 1024:8.1f} KiB")


if __name__ == "__main__":
    main()
