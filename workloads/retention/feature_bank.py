"""Contrastive training with a memory bank of past embeddings that is never trimmed.

The bank concatenates every batch's detached embeddings (`self.feats = torch.cat([self.feats,
f.detach()])`) to serve as negatives. A MoCo-style queue would drop the oldest entries; this one
keeps all of them on the GPU, so it grows by a batch of embeddings per step until the OOM.
--fixed 1 keeps only the newest --queue entries.
"""

import argparse

import torch
import torchvision
from torch import nn


class FeatureBank:
    def __init__(self, width: int, device, queue: int | None):
        self.feats = torch.empty(0, width, device=device)
        self.queue = queue

    def add(self, f):
        self.feats = torch.cat([self.feats, f.detach()])
        if self.queue:
            self.feats = self.feats[-self.queue:]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--width", type=int, default=65536)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    size = 96
    if args.dry_run:
        args.batch_size, args.steps, args.width, size = 4, 2, 64, 32
    torch.manual_seed(0)
    backbone = torchvision.models.resnet18(weights=None, num_classes=args.width).to(args.device)
    optimizer = torch.optim.SGD(backbone.parameters(), lr=0.03, momentum=0.9)
    bank = FeatureBank(args.width, args.device, queue=4 * args.batch_size if args.fixed else None)
    for step in range(args.steps):
        images = torch.randn(args.batch_size, 3, size, size, device=args.device)
        f = nn.functional.normalize(backbone(images), dim=1)
        if bank.feats.numel():
            negatives = bank.feats[-4096:]
            logits = f @ negatives.T
            loss = -nn.functional.log_softmax(logits, dim=1).mean()
        else:
            loss = f.pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        bank.add(f)
        print(f"[progress] step {step + 1} done", flush=True)
    print(f"bank holds {bank.feats.shape[0]} embeddings", flush=True)


if __name__ == "__main__":
    main()
