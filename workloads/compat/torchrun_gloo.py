"""Two processes on one GPU (torchrun --nproc-per-node 2), gloo all_reduce of CUDA-computed sums."""
import sys
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.cuda.set_device(0)
x = torch.full((1024, 1024), float(rank + 1), device="cuda")
for step in range(10):
    torch.cuda.synchronize()
    began = time.perf_counter()
    y = (x @ x).sum().cpu().reshape(1)
    dist.all_reduce(y)
    torch.cuda.synchronize()
    # One write per line: the two ranks share the output, and print() writes the newline separately.
    sys.stdout.write(f"step_ms {1000 * (time.perf_counter() - began):.3f}\n")
    sys.stdout.write(f"rank {rank} step {step} reduced {float(y):.0f}\n")
dist.destroy_process_group()
