"""torch.utils.checkpoint around each block, reentrant or not, under bf16 autocast."""
import argparse
import time

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

parser = argparse.ArgumentParser()
parser.add_argument("--reentrant", action="store_true")
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--temporary", action="store_true",
                    help="each block keeps a temporary in a local that no saved tensor needs (freed as its frame unwinds)")
args = parser.parse_args()
torch.manual_seed(0)
blocks = nn.ModuleList(nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)) for _ in range(8)).cuda()
optimizer = torch.optim.AdamW(blocks.parameters(), lr=1e-4)
x = torch.randn(512, 1024, device="cuda", requires_grad=True)


def with_temporary(block, h):
    scratch = h * 2  # not saved for backward: freed when this frame ends, also when the recomputation stops early
    return block(h) + 0 * scratch.sum()

for step in range(args.steps):
    torch.cuda.synchronize()
    began = time.perf_counter()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        h = x
        for block in blocks:
            if args.temporary:
                h = checkpoint(with_temporary, block, h, use_reentrant=args.reentrant)
            else:
                h = checkpoint(block, h, use_reentrant=args.reentrant)
        loss = h.float().pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print(f"step_ms {1000 * (time.perf_counter() - began):.3f}")
print("reentrant", args.reentrant, "loss finite", bool(torch.isfinite(loss)))
