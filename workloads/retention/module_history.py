"""A model that records its hidden states in an attribute on every forward call, for visualisation.

The encoder's forward does `self.history += [h]` so the hidden states can be plotted after
training. Each forward appends a batch of hidden states (still on the GPU) to the module's list,
so memory grows every step until the OOM. --fixed 1 records a detached CPU summary instead.
"""

import argparse

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab: int, width: int, layers: int, keep_summary: bool):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, nhead=8, dim_feedforward=4 * width, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)
        self.keep_summary = keep_summary
        self.history = []

    def forward(self, tokens):
        h = self.blocks(self.embed(tokens))
        if self.keep_summary:
            self.history += [h.detach().mean(dim=1).cpu()]
        else:
            self.history += [h]
        return self.head(h)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.seq_len, args.steps = 2, 8, 2
    torch.manual_seed(0)
    model = Encoder(8192, 512, 4, bool(args.fixed)).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step in range(args.steps):
        tokens = torch.randint(0, 8192, (args.batch_size, args.seq_len), device=args.device)
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"[progress] step {step + 1} done", flush=True)
    print(f"kept {len(model.history)} hidden-state records", flush=True)


if __name__ == "__main__":
    main()
