"""Image embeddings with a timm ConvNeXt under torch.inference_mode(), at three resolutions, the way a
retrieval index is built: every batch's pooled features are copied to the CPU and nothing is kept on
the GPU.

Everything is freed, yet the run ends with gigabytes reserved: PyTorch's caching allocator keeps the
blocks of the large activations for reuse (what nvidia-smi shows), while only the weights are allocated.
"""

import argparse

import timm
import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--model", default="convnext_tiny")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--batches", type=int, default=2, help="batches per resolution")
    parser.add_argument("--sizes", default="224,288,384")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.batches, args.sizes = 2, 1, "32,48"

    torch.manual_seed(0)
    model = timm.create_model(args.model, pretrained=False, num_classes=0).to(args.device).eval()
    index = []
    step = 0
    with torch.inference_mode():
        for size in (int(s) for s in args.sizes.split(",")):
            for _ in range(args.batches):
                images = torch.randn(args.batch_size, 3, size, size, device=args.device)
                features = model(images)
                index.append(torch.nn.functional.normalize(features, dim=-1).cpu())
                step += 1
                print(f"[progress] batch {step} done at {size}px", flush=True)
    embeddings = torch.cat(index)
    print(f"indexed {embeddings.shape[0]} images, {embeddings.shape[1]} dimensions", flush=True)


if __name__ == "__main__":
    main()
