"""Record a real snapshot with 1,000,000 trace entries (python stacks) on a CUDA machine.

    python benchmarks/record_million.py OUT.pickle
A small training loop with many short-lived allocations runs until the ring buffer is full.
"""

import sys

import torch
from torch import nn

ENTRIES = 1_000_000

torch.cuda.memory._record_memory_history(max_entries=ENTRIES, stacks="python")
model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.GELU()) for _ in range(8)]).cuda()
optimizer = torch.optim.Adam(model.parameters())
steps = 0
while True:
    x = torch.randn(64, 256, device="cuda")
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    steps += 1
    if steps % 200 == 0:
        entries = len(torch.cuda.memory._snapshot()["device_traces"][0])
        if entries >= ENTRIES:
            break
torch.cuda.memory._dump_snapshot(sys.argv[1])
print(f"{steps} steps, {entries} trace entries")
