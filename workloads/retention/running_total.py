"""An evaluation that sums its batch losses into a tensor, with autograd on.

`evaluate()` puts the model in eval mode but forgets torch.no_grad(), and accumulates with
`total = total + loss`: each sum is a new tensor whose graph reaches every earlier batch's, so the
running total keeps every evaluation batch's saved activations until the OOM, part-way through the
evaluation. --fixed 1 adds loss.item() instead.
"""

import argparse

import torch
import torchvision
from torch import nn


def evaluate(model, batches, batch_size, size, device, fixed):
    model.eval()
    criterion = nn.CrossEntropyLoss()
    total = torch.zeros((), device=device)
    for batch in range(batches):
        images = torch.randn(batch_size, 3, size, size, device=device)
        labels = torch.randint(0, 10, (batch_size,), device=device)
        loss = criterion(model(images), labels)
        if fixed:
            loss = loss.item()
        total = total + loss
        print(f"[progress] batch {batch + 1} done", flush=True)
    return total / batches


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    size = 160
    if args.dry_run:
        args.batch_size, args.batches, size = 2, 3, 32
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None, num_classes=10).to(args.device)
    score = evaluate(model, args.batches, args.batch_size, size, args.device, args.fixed)
    print(f"mean loss {float(score):.3f}", flush=True)


if __name__ == "__main__":
    main()
