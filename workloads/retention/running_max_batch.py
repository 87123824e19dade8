"""Counter-case: an inference pass that keeps an element-wise running maximum of the outputs, at too large a batch.

Under torch.no_grad() `best = torch.maximum(best, out)` replaces the kept tensor every batch (nothing
grows), but the batch is too large for one forward pass of the encoder: the first batch runs out of
memory. The cause is one step's working set.
"""

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seq-len", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    width, layers = 512, 4
    if args.dry_run:
        args.batch_size, args.seq_len, args.batches, width, layers = 2, 8, 2, 32, 1
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(width, nhead=8, dim_feedforward=4 * width, batch_first=True)
    model = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).to(args.device).eval()
    best = None
    with torch.no_grad():
        for batch in range(args.batches):
            x = torch.randn(args.batch_size, args.seq_len, width, device=args.device)
            out = model(x)
            best = out if best is None else torch.maximum(best, out)
            print(f"[progress] batch {batch + 1} done", flush=True)
    print(f"running max {best.mean().item():.4f}", flush=True)


if __name__ == "__main__":
    main()
