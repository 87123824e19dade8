"""A GPU-bound training step, timed: the workload for the capture-overhead benchmark.

    python benchmarks/capture_step.py            # bare
    vramlens run benchmarks/capture_step.py      # under capture
Prints the median step time in milliseconds (CUDA-synchronised) on its last line.
"""

import statistics
import time

import torch
from torch import nn

torch.manual_seed(0)
width, tokens = 4096, 8192
model = nn.Sequential(*[nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)) for _ in range(4)])
model = model.cuda().to(torch.bfloat16)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(tokens, width, device="cuda", dtype=torch.bfloat16)

times = []
for step in range(60):
    torch.cuda.synchronize()
    start = time.perf_counter()
    loss = model(x).float().pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    if step >= 10:  # warm-up steps excluded
        times.append((time.perf_counter() - start) * 1000)
print(f"median_step_ms {statistics.median(times):.3f}")
