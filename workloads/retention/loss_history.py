"""A token-classification training loop that logs a validation loss every step in a dict of lists.

`history["val_loss"].append(val_loss)` keeps the tensor, and with it the saved activations of the
validation forward pass it came from (no torch.no_grad() around it, no backward on it): memory grows
by one validation pass per step until the OOM. --fixed 1 logs the loss as a float.
"""

import argparse
from collections import defaultdict

import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self, vocab: int, width: int, layers: int, tags: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, nhead=8, dim_feedforward=4 * width, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(width, tags)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    width, layers = 512, 6
    if args.dry_run:
        args.batch_size, args.seq_len, args.steps, width, layers = 2, 16, 3, 32, 1
    torch.manual_seed(0)
    model = Tagger(8000, width, layers, 17).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    criterion = nn.CrossEntropyLoss()
    val_tokens = torch.randint(0, 8000, (args.batch_size, args.seq_len), device=args.device)
    val_tags = torch.randint(0, 17, (args.batch_size, args.seq_len), device=args.device)
    history = defaultdict(list)
    for step in range(args.steps):
        tokens = torch.randint(0, 8000, (args.batch_size, args.seq_len), device=args.device)
        tags = torch.randint(0, 17, (args.batch_size, args.seq_len), device=args.device)
        loss = criterion(model(tokens).flatten(0, 1), tags.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        history["train_loss"].append(loss.item())
        val_loss = criterion(model(val_tokens).flatten(0, 1), val_tags.flatten())
        if args.fixed:
            val_loss = val_loss.item()
        history["val_loss"].append(val_loss)
        print(f"[progress] step {step + 1} done", flush=True)
    print(f"val loss {float(history['val_loss'][0]):.3f} -> {float(history['val_loss'][-1]):.3f}", flush=True)


if __name__ == "__main__":
    main()
