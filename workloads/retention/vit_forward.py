"""Training a timm ViT-B/16 in float32 with a batch too large: the forward pass runs out of memory.

Each transformer block saves its activations for the backward pass; at this batch they outgrow the
card before the forward pass ends. --forward-only 1 runs the forward pass under torch.no_grad()
(nothing saved) to measure what the weights and one block's working set need.
"""

import argparse

import timm
import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--forward-only", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    name = "vit_base_patch16_224"
    if args.dry_run:
        args.batch_size, args.steps = 2, 1
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, num_classes=1000).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss()
    for step in range(args.steps):
        images = torch.randn(args.batch_size, 3, 224, 224, device=args.device)
        labels = torch.randint(0, 1000, (args.batch_size,), device=args.device)
        if args.forward_only:
            with torch.no_grad():
                model(images)
        else:
            loss = criterion(model(images), labels)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        print(f"[progress] step {step + 1} done", flush=True)


if __name__ == "__main__":
    main()
