"""DDP training in which the last rank gets a larger batch (an uneven shard) and runs out of memory.

Recorded with (scenarios/record_rank_fixtures.sh):
    vramlens run --memory-limit 2560MiB --torchrun --standalone --nproc-per-node 2 scenarios/ddp_uneven.py
Expected: the last rank fails with its own OOM in the forward pass; the other rank, whose batch fits,
waits in the gradient all-reduce for a peer that is gone until torchrun ends it (no OOM of its own).
Every rank holds the same model, gradients, DDP buckets and NCCL buffers: only the activations differ.
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--larger", type=int, default=8, help="the last rank's batch is this many times larger")
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--backend", default="nccl", help="nccl (one GPU per rank) or gloo")
    args = parser.parse_args()

    dist.init_process_group(args.backend)
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank % torch.cuda.device_count())
    rank, world = dist.get_rank(), dist.get_world_size()
    layers = [module for _ in range(4) for module in (nn.Linear(args.width, args.width), nn.GELU())]
    model = DistributedDataParallel(nn.Sequential(*layers).cuda(), device_ids=[torch.cuda.current_device()])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    batch = args.batch * (args.larger if rank == world - 1 else 1)  # the uneven shard
    for step in range(args.steps):
        inputs = torch.randn(batch, args.width, device="cuda")  # vramlens: culprit
        loss = model(inputs).square().mean()  # vramlens: culprit
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"rank {rank}: step {step} batch {batch} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
