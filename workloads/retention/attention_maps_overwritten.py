"""A vision transformer that keeps its last attention maps for visualisation, trained at too large a batch.

Each attention block stores `self.last_attention = weights.detach()`, overwritten by every forward
pass: state of the current step, not growth. The batch is too large for the card, and the first
step's forward pass runs out of memory: the working set, not the stored maps, is what to change.
"""

import argparse

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.last_attention = None

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        weights = (q @ k.transpose(-2, -1) * (c // self.heads) ** -0.5).softmax(dim=-1)
        self.last_attention = weights.detach()
        return self.proj((weights @ v).transpose(1, 2).reshape(b, n, c))


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    width, depth, tokens = 384, 12, 577
    if args.dry_run:
        args.batch_size, args.steps, width, depth, tokens = 2, 2, 36, 2, 17
    torch.manual_seed(0)
    model = nn.Sequential(*[Block(width, 6) for _ in range(depth)], nn.LayerNorm(width)).to(args.device)
    head = nn.Linear(width, 100).to(args.device)
    optimizer = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-4)
    for step in range(args.steps):
        x = torch.randn(args.batch_size, tokens, width, device=args.device)
        y = torch.randint(0, 100, (args.batch_size,), device=args.device)
        loss = nn.functional.cross_entropy(head(model(x)[:, 0]), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        print(f"[progress] step {step + 1} done", flush=True)


if __name__ == "__main__":
    main()
