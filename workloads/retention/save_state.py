"""Writes the checkpoint load_to_cuda.py reads: a model's state_dict saved from the GPU."""

import argparse

import torch

from load_to_cuda import build_model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default="encoder.pt")
    parser.add_argument("--dry-run", action="store_true", help="the tiny model of load_to_cuda.py --dry-run")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.save(build_model(dry_run=args.dry_run).to(args.device).state_dict(), args.out)


if __name__ == "__main__":
    main()
