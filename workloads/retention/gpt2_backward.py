"""The first training step of a 24-layer GPT-2: the forward pass fits, the backward pass does not.

The gradients of the 760M parameters are created during the first backward pass, on top of the
activations still saved for it; at this size they no longer fit beside them and the backward pass
runs out of memory. --forward-only 1 computes the loss without backward (the forward's own need).
"""

import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--forward-only", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    layers, width = 24, 1536
    if args.dry_run:
        args.batch_size, args.seq_len, args.steps, layers, width = 1, 16, 1, 2, 64
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=50257, n_positions=args.seq_len, n_embd=width, n_layer=layers, n_head=16)
    model = GPT2LMHeadModel(config).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        tokens = torch.randint(0, config.vocab_size, (args.batch_size, args.seq_len), device=args.device)
        loss = model(input_ids=tokens, labels=tokens).loss
        if not args.forward_only:
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        del loss
        print(f"[progress] step {step + 1} done", flush=True)


if __name__ == "__main__":
    main()
