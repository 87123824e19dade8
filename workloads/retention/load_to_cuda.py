"""Resuming fine-tuning from a checkpoint loaded straight onto the GPU.

The model is built on the GPU, then the checkpoint is read with map_location="cuda", which puts a
second full copy of the weights on the device before load_state_dict copies them over; with the
optimizer's state on top, the first step runs out of memory. --map-location cpu reads it to the CPU.
"""

import argparse

import torch
from torch import nn


def build_model(width: int = 2048, layers: int = 12, dry_run: bool = False) -> nn.Module:
    if dry_run:
        width, layers = 64, 2
    return nn.Sequential(*[nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
                           for _ in range(layers)])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--checkpoint", default="encoder.pt")
    parser.add_argument("--map-location", default="cuda")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.steps = 2, 1
    model = build_model(dry_run=args.dry_run).to(args.device)
    state = torch.load(args.checkpoint, map_location=args.map_location)
    model.load_state_dict(state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    for step in range(args.steps):
        x = torch.randn(args.batch_size, model[0][0].in_features, device=args.device)
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"[progress] step {step + 1} done", flush=True)


if __name__ == "__main__":
    main()
