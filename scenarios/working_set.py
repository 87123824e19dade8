"""A token-wise MLP training step whose activations alone outgrow the memory cap.

Recorded with: vramlens run --memory-limit 6GiB scenarios/working_set.py --tokens 49152
Expected cause: working_set (the live activations of one step do not fit; nothing leaks).
"""

import argparse

import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x):
        h = self.up(x)  # vramlens: culprit
        h = nn.functional.gelu(h)  # vramlens: culprit
        return self.down(h)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=49152)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--hidden", type=int, default=8192)
    args = parser.parse_args()

    model = FeedForward(args.width, args.hidden).cuda()
    optimizer = torch.optim.Adam(model.parameters())
    for step in range(3):
        x = torch.randn(args.tokens, args.width, device="cuda")
        loss = model(x).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
