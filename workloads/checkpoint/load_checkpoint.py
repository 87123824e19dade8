"""Serve a model from a checkpoint: torch.load of a GPU-saved state_dict beside the model on the GPU.

The model is built on the GPU first, then the checkpoint is read with torch.load's default
map_location, which restores every tensor to the device it was saved from: a second copy of all
the weights lands on the GPU beside the model, and the OOM comes inside torch.load.
--map-location cpu reads it into host memory, and load_state_dict copies it into the model.
"""

import argparse

import torch

from model import build_model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--checkpoint", default="checkpoints/model.pt")
    parser.add_argument("--map-location", default=None, help="e.g. cpu (default: where the tensors were saved)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = build_model(small=args.dry_run).to(args.device).eval()
    state = torch.load(args.checkpoint, map_location=args.map_location)
    model.load_state_dict(state)
    print("[progress] checkpoint loaded", flush=True)
    with torch.inference_mode():
        for batch in range(args.batches):
            tokens = torch.randint(0, model.config.vocab_size, (args.batch_size, 128), device=args.device)
            next_tokens = model(input_ids=tokens).logits[:, -1].argmax(dim=-1)
            print(f"[progress] batch {batch + 1} done: {next_tokens[:4].tolist()}", flush=True)


if __name__ == "__main__":
    main()
