"""A healthy timm training run: a ResNet-18 trained a few steps at a batch that fits comfortably."""

import argparse

import timm
import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--image-size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.image_size, args.steps = min(args.batch_size, 2), 32, min(args.steps, 2)

    torch.manual_seed(0)
    model = timm.create_model(args.model, pretrained=False, num_classes=10).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    criterion = torch.nn.CrossEntropyLoss()
    for step in range(args.steps):
        images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=args.device)
        labels = torch.randint(0, 10, (args.batch_size,), device=args.device)
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"[progress] step {step + 1} done, loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
