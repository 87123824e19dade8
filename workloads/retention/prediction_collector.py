"""A language-model training loop whose metric helper keeps every step's predicted distributions.

`PredictionCollector.update()` extends its list with the rows of each step's softmax
(`self.rows.extend(probs)`): every row is a view of that step's full probability tensor, which stays
on the GPU, so memory grows by one batch of vocabulary-sized distributions per step until the OOM.
--fixed 1 keeps the argmax ids on the CPU.
"""

import argparse

import torch
from torch import nn


class PredictionCollector:
    def __init__(self, fixed: bool):
        self.rows = []
        self.fixed = fixed

    def update(self, logits):
        probs = logits.softmax(dim=-1)
        if self.fixed:
            self.rows.extend(probs.argmax(dim=-1).cpu())
            return
        self.rows.extend(probs)


class TinyLM(nn.Module):
    def __init__(self, vocab: int, width: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.mix = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        self.out = nn.Linear(width, vocab)

    def forward(self, tokens):
        hidden = self.embed(tokens)
        return self.out(hidden + self.mix(hidden))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    vocab, width = 32000, 512
    if args.dry_run:
        args.batch_size, args.seq_len, args.steps, vocab, width = 2, 8, 3, 100, 16
    torch.manual_seed(0)
    model = TinyLM(vocab, width).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    collector = PredictionCollector(bool(args.fixed))
    for step in range(args.steps):
        tokens = torch.randint(0, vocab, (args.batch_size, args.seq_len + 1), device=args.device)
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        collector.update(logits.detach())
        print(f"[progress] step {step + 1} done", flush=True)
    print(f"collected {len(collector.rows)} rows", flush=True)


if __name__ == "__main__":
    main()
