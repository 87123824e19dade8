"""Train a few steps on the GPU and save the model's state_dict as it is: GPU tensors.

Writes the checkpoint that load_checkpoint.py resumes from, the way a training job leaves one behind.
"""

import argparse
from pathlib import Path

import torch

from model import build_model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--output", default="checkpoints/model.pt")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = build_model(small=args.dry_run).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    for _ in range(2):
        tokens = torch.randint(0, model.config.vocab_size, (2, 64), device=args.device)
        model(input_ids=tokens, labels=tokens).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), args.output)
    print(f"saved {args.output}", flush=True)


if __name__ == "__main__":
    main()
