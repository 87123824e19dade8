"""A training loop that records each step's model output in a dict keyed by step, for later analysis.

`metrics[step] = out` keeps the whole output object of every step — its vocabulary-sized logits on
the GPU — so memory grows by one batch of logits per step until the OOM. --fixed 1 keeps the
loss as a float instead.
"""

import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.seq_len, args.steps = 2, 8, 2
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=32768, n_positions=args.seq_len, n_embd=512, n_layer=4, n_head=8)
    model = GPT2LMHeadModel(config).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    metrics = {}
    for step in range(args.steps):
        tokens = torch.randint(0, config.vocab_size, (args.batch_size, args.seq_len), device=args.device)
        out = model(input_ids=tokens, labels=tokens)
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if args.fixed:
            metrics[step] = out.loss.item()
        else:
            metrics[step] = out
        print(f"[progress] step {step + 1} done", flush=True)
    print(f"recorded {len(metrics)} steps", flush=True)


if __name__ == "__main__":
    main()
