"""A training loop that inspects the gradients of every block's output with tensor hooks.

`h.register_hook(hook_for(name))` on each block's output calls `keep`, which stores the incoming
gradient in `captured[name]`: each step adds one activation-sized gradient per block, still on the
GPU, so memory grows until the OOM. --fixed 1 stores each gradient's norm as a float.
"""

import argparse
from collections import defaultdict

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        return x + self.ff(self.norm(x))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    width, layers = 1024, 8
    if args.dry_run:
        args.batch_size, args.seq_len, args.steps, width, layers = 2, 8, 3, 16, 2
    torch.manual_seed(0)
    blocks = nn.ModuleList(Block(width) for _ in range(layers)).to(args.device)
    head = nn.Linear(width, 10).to(args.device)
    optimizer = torch.optim.AdamW(list(blocks.parameters()) + list(head.parameters()), lr=1e-4)
    captured = defaultdict(list)
    fixed = bool(args.fixed)

    def hook_for(name):
        def keep(grad):
            captured[name].append(grad.norm().item() if fixed else grad)
        return keep

    for step in range(args.steps):
        h = torch.randn(args.batch_size, args.seq_len, width, device=args.device)
        labels = torch.randint(0, 10, (args.batch_size,), device=args.device)
        for index, block in enumerate(blocks):
            h = block(h)
            h.register_hook(hook_for(f"block{index}"))
        loss = nn.functional.cross_entropy(head(h.mean(dim=1)), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        print(f"[progress] step {step + 1} done", flush=True)
    print(f"captured {sum(len(grads) for grads in captured.values())} gradients", flush=True)


if __name__ == "__main__":
    main()
