"""An evaluation that keeps (logits, labels) pairs to score them at the end, with autograd on.

The model is put in eval mode, but nothing turns autograd off: every batch's logits carry the graph of
the forward pass that made them, and `results.append((logits, labels))` keeps them, with every saved
activation, until the OOM part-way through the evaluation. --fixed 1 keeps detached logits.
"""

import argparse

import torch
import torchvision


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.batches, args.size = 2, 3, 32
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=100).to(args.device)
    model.eval()
    results = []
    for batch in range(args.batches):
        images = torch.randn(args.batch_size, 3, args.size, args.size, device=args.device)
        labels = torch.randint(0, 100, (args.batch_size,), device=args.device)
        logits = model(images)
        if args.fixed:
            logits = logits.detach()
        results.append((logits, labels))
        print(f"[progress] batch {batch + 1} done", flush=True)
    correct = sum((logits.argmax(dim=1) == labels).sum().item() for logits, labels in results)
    print(f"accuracy {correct / (len(results) * args.batch_size):.3f}", flush=True)


if __name__ == "__main__":
    main()
