"""AdamW's first optimizer.step(): parameters and gradients fit, the optimizer state does not.

A Llama-style model (random weights) whose parameters and gradients fit on the card with room
for the activations of a small batch; AdamW creates exp_avg and exp_avg_sq (two more copies of
the parameters) lazily inside the first step(), then computes its update with temporaries of the
same size, and that is where the OOM comes. Halving --layers makes it fit, and so does
--optimizer adafactor (factored second moments, no first moment).
"""

import argparse

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--optimizer", choices=("adamw", "adafactor"), default="adamw")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    hidden, intermediate = (2048, 5504) if not args.dry_run else (64, 128)
    if args.dry_run:
        args.layers, args.batch_size, args.seq_len = min(args.layers, 2), 2, 8

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=8192, hidden_size=hidden, intermediate_size=intermediate,
                         num_hidden_layers=args.layers, num_attention_heads=16, num_key_value_heads=16,
                         max_position_embeddings=args.seq_len)
    model = LlamaForCausalLM(config).to(args.device)
    print(f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters", flush=True)
    if args.optimizer == "adamw":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    else:
        optimizer = torch.optim.Adafactor(model.parameters(), lr=1e-2)
    for step in range(args.steps):
        tokens = torch.randint(0, config.vocab_size, (args.batch_size, args.seq_len), device=args.device)
        loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"[progress] step {step + 1} done, loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
