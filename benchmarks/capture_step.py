"""A GPU-bound training step, timed: the workload for the capture-overhead benchmark.

    python benchmarks/capture_step.py [--steps 60] [--grow-mib 0]   # bare
    vramlens run benchmarks/capture_step.py [...]                   # under capture
Prints the median step time in milliseconds (CUDA-synchronised) on its last line.
``--grow-mib M`` keeps M MiB more alive after every step (a growing run: the peak census is
taken as often as its share of the run's time allows, from 5 s into the run, so give it
``--steps`` enough to run on well past that); 0, the default, is a steady run.
"""

import argparse
import statistics
import time

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=60)
parser.add_argument("--grow-mib", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(0)
width, tokens = 4096, 8192
model = nn.Sequential(*[nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)) for _ in range(4)])
model = model.cuda().to(torch.bfloat16)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(tokens, width, device="cuda", dtype=torch.bfloat16)
kept = []

times = []
for step in range(args.steps):
    torch.cuda.synchronize()
    start = time.perf_counter()
    loss = model(x).float().pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if args.grow_mib:
        kept.append(torch.empty(args.grow_mib * 2**20, dtype=torch.uint8, device="cuda"))
    torch.cuda.synchronize()
    if step >= 10:  # warm-up steps excluded
        times.append((time.perf_counter() - start) * 1000)
print(f"median_step_ms {statistics.median(times):.3f}")
