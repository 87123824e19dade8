"""Many short-lived allocations with deep Python stacks: a small MLP trained for --steps steps,
each layer called through --depth nested Python calls (to fill a large allocator history)."""
import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=10000)
parser.add_argument("--depth", type=int, default=1)
args = parser.parse_args()


def nested(depth, fn, x):
    return fn(x) if depth <= 1 else nested(depth - 1, fn, x)


model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.GELU()) for _ in range(8)]).cuda()
optimizer = torch.optim.Adam(model.parameters())
for step in range(args.steps):
    x = torch.randn(64, 256, device="cuda")
    loss = nested(args.depth, model, x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
print("steps", args.steps)
