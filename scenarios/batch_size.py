"""A small training step whose memory grows with --batch-size: what is the largest that fits?

Recorded with: vramlens experiment --find-max batch-size --limit 1GiB --lo 1024 --step 1024 scenarios/batch_size.py
Weights and Adam state are fixed (about 100 MiB); activations and their gradients grow by a fixed
number of bytes per sample, so peak memory is a straight line in the batch size.
"""

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()
    optimizer = torch.optim.Adam(model.parameters())
    for step in range(args.steps):
        x = torch.randn(args.batch_size, 1024, device="cuda")  # vramlens: culprit
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    print(f"batch size {args.batch_size}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
