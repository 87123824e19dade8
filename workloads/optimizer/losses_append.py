"""A training loop that keeps every step's monitoring loss with its autograd graph.

Each step trains on a batch, then measures the loss on a held-out batch for the learning curve,
without torch.no_grad(), and appends that tensor to a list. No backward() ever runs on it, so each
kept loss holds its forward pass's saved activations: memory grows every step until the OOM after
many steps. --fixed 1 appends loss.item() instead.
"""

import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--fixed", type=int, default=0, help="1: keep loss.item() instead of the tensor")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.seq_len, args.steps = min(args.batch_size, 2), 8, min(args.steps, 3)

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=8192, n_positions=args.seq_len, n_embd=512, n_layer=2, n_head=8,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    held_out = torch.randint(0, config.vocab_size, (args.batch_size, args.seq_len), device=args.device)
    val_losses = []
    for step in range(args.steps):
        tokens = torch.randint(0, config.vocab_size, (args.batch_size, args.seq_len), device=args.device)
        loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        val_loss = model(input_ids=held_out, labels=held_out).loss
        val_losses.append(val_loss.item() if args.fixed else val_loss)
        print(f"[progress] step {step + 1} done", flush=True)
    curve = [float(value) for value in val_losses]
    print(f"held-out loss {curve[0]:.3f} -> {curve[-1]:.3f}", flush=True)


if __name__ == "__main__":
    main()
