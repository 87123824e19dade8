"""Batch inference with a timm ViT that keeps every batch's embeddings — with grad mode on.

The script embeds a set of images and keeps the embeddings on the GPU for a similarity search at
the end. It forgot torch.no_grad(), so each kept embedding also holds its forward pass's saved
activations. The run completes, close to the limit: one batch more would not fit. --fixed 1 runs
under torch.no_grad().
"""

import argparse
import contextlib

import timm
import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    model_name, size = "vit_small_patch16_224", 224
    if args.dry_run:
        args.batch_size, args.batches, size = 2, 2, 224
    torch.manual_seed(0)
    model = timm.create_model(model_name, pretrained=False, num_classes=0).to(args.device).eval()
    embeddings = []
    with torch.no_grad() if args.fixed else contextlib.nullcontext():
        for batch in range(args.batches):
            images = torch.randn(args.batch_size, 3, size, size, device=args.device)
            embeddings.append(model(images))
            print(f"[progress] batch {batch + 1} done", flush=True)
    bank = torch.nn.functional.normalize(torch.cat(embeddings), dim=1)
    nearest = (bank[:8] @ bank.T).topk(min(5, len(bank))).indices
    print(f"nearest neighbours of the first images: {nearest[:2].tolist()}", flush=True)


if __name__ == "__main__":
    main()
