"""Write the token files nanoGPT's train.py reads: data/<dataset>/train.bin and val.bin.

Random GPT-2 token ids (uint16, as nanoGPT's own prepare scripts write them); nothing is downloaded.
"""

import argparse
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="synthetic")
    parser.add_argument("--train-tokens", type=int, default=2_000_000)
    parser.add_argument("--val-tokens", type=int, default=200_000)
    args = parser.parse_args()
    folder = Path("data") / args.dataset
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for name, count in (("train.bin", args.train_tokens), ("val.bin", args.val_tokens)):
        rng.integers(0, 50257, size=count, dtype=np.uint16).tofile(folder / name)
    print(f"wrote {folder}/train.bin and val.bin", flush=True)


if __name__ == "__main__":
    main()
