"""Batch inference with a torchvision ResNet-50 at several resolutions, then everything is freed.

Large inference batches make the caching allocator reserve gigabytes for the activations; when the
work is done and every tensor is gone, PyTorch keeps those blocks cached for reuse instead of
returning them to the driver. The run completes with almost nothing allocated and gigabytes
reserved: what nvidia-smi shows is the cache, not a leak.
"""

import argparse

import torch
import torchvision


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--resolutions", default="224,288,352")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.resolutions = min(args.batch_size, 2), "32,48"

    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).to(args.device).eval()
    counts = torch.zeros(1000, dtype=torch.long)
    with torch.inference_mode():
        for resolution in (int(value) for value in args.resolutions.split(",")):
            images = torch.randn(args.batch_size, 3, resolution, resolution, device=args.device)
            predicted = model(images).argmax(dim=1)
            counts += torch.bincount(predicted.cpu(), minlength=1000)
            print(f"[progress] resolution {resolution} done", flush=True)
    del model, images, predicted
    print(f"classified {int(counts.sum())} images into {int((counts > 0).sum())} classes", flush=True)


if __name__ == "__main__":
    main()
