"""Training with an exponential moving average of the weights, keeping an EMA snapshot per step.

The EMA is updated after each optimizer step, and its state is copied into a list every step to
pick the best snapshot after validation. Each copy is a full set of weights on the GPU, so the
list grows by one model per step until the OOM. --fixed 1 keeps the snapshots on the CPU.
"""

import argparse
import copy

import torch
from transformers import GPT2Config, GPT2LMHeadModel


class EMA:
    def __init__(self, model, decay: float = 0.999):
        self.decay = decay
        self.model = copy.deepcopy(model).eval()
        for param in self.model.parameters():
            param.requires_grad_(False)

    @torch.no_grad()
    def update(self, model):
        for ema_param, param in zip(self.model.parameters(), model.parameters()):
            ema_param.lerp_(param, 1 - self.decay)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.seq_len, args.steps = 2, 8, 2
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=32768, n_positions=args.seq_len, n_embd=768, n_layer=6, n_head=12)
    model = GPT2LMHeadModel(config).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    ema = EMA(model)
    snapshots = []
    for step in range(args.steps):
        tokens = torch.randint(0, config.vocab_size, (args.batch_size, args.seq_len), device=args.device)
        model(input_ids=tokens, labels=tokens).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        ema.update(model)
        if args.fixed:
            snapshots.append({k: v.detach().to("cpu", copy=True) for k, v in ema.model.state_dict().items()})
        else:
            snapshots.append({k: v.detach().clone() for k, v in ema.model.state_dict().items()})
        print(f"[progress] step {step + 1} done", flush=True)
    print(f"kept {len(snapshots)} EMA snapshots", flush=True)


if __name__ == "__main__":
    main()
