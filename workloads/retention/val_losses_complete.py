"""An image classifier's training loop that logs a validation loss tensor every step — and completes.

Each step trains on a batch, then computes the loss on a fixed validation batch without
torch.no_grad() and appends the tensor to `val_losses` for the learning curve. No backward ever
runs on it, so every kept loss holds its forward pass's saved activations: memory climbs every
step, but the run is short enough to finish. --fixed 1 appends loss.item().
"""

import argparse

import torch
import torchvision
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    size = 128
    if args.dry_run:
        args.batch_size, args.steps, size = 2, 3, 32
    torch.manual_seed(0)
    model = torchvision.models.resnet34(weights=None, num_classes=100).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    val_images = torch.randn(args.batch_size, 3, size, size, device=args.device)
    val_labels = torch.randint(0, 100, (args.batch_size,), device=args.device)
    val_losses = []
    for step in range(args.steps):
        images = torch.randn(args.batch_size, 3, size, size, device=args.device)
        labels = torch.randint(0, 100, (args.batch_size,), device=args.device)
        loss = criterion(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        val_loss = criterion(model(val_images), val_labels)
        val_losses.append(val_loss.item() if args.fixed else val_loss)
        print(f"[progress] step {step + 1} done", flush=True)
    print(f"validation loss {float(val_losses[0]):.3f} -> {float(val_losses[-1]):.3f}", flush=True)


if __name__ == "__main__":
    main()
