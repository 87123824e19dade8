"""Feature extraction with a forward hook: every batch's layer3 activations are kept on the GPU.

A forward hook on a torchvision ResNet-50's layer3 appends the module's output to a list so the
features can be pooled and written out after the loop. The list keeps each batch's full feature
map on the device, one more per batch, until the OOM. --fixed 1 keeps the pooled features on the CPU.
"""

import argparse

import torch
import torchvision

feats = []


def keep_features(module, inputs, output):
    feats.append(output)


def keep_pooled(module, inputs, output):
    feats.append(output.mean(dim=(2, 3)).cpu())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    size = 224
    if args.dry_run:
        args.batch_size, args.batches, size = 2, 2, 64
    model = torchvision.models.resnet50(weights=None).to(args.device).eval()
    model.layer3.register_forward_hook(keep_pooled if args.fixed else keep_features)
    with torch.no_grad():
        for batch in range(args.batches):
            images = torch.randn(args.batch_size, 3, size, size, device=args.device)
            model(images)
            print(f"[progress] batch {batch + 1} done", flush=True)
    pooled = torch.cat([f.float().mean(dim=(2, 3)).cpu() if f.dim() == 4 else f for f in feats])
    print(f"features {tuple(pooled.shape)}", flush=True)


if __name__ == "__main__":
    main()
