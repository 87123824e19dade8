"""torch.compile, default mode or mode="reduce-overhead" (CUDA graphs and their private pool)."""
import argparse
import time

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="default")
parser.add_argument("--steps", type=int, default=30)
args = parser.parse_args()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
step_fn = torch.compile(model, mode=None if args.mode == "default" else args.mode)
x = torch.randn(256, 1024, device="cuda")
for step in range(args.steps):
    torch.cuda.synchronize()
    began = time.perf_counter()
    loss = step_fn(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    if step >= 3:  # compilation and graph recording are not steady steps
        print(f"step_ms {1000 * (time.perf_counter() - began):.3f}")
print("mode", args.mode, "steps", args.steps, "loss finite", bool(torch.isfinite(loss)))
