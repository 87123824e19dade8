"""A retrieval index built by concatenating each batch's embeddings onto a bank, with autograd on.

`index_corpus` encodes the corpus batch by batch and grows `bank = torch.cat([bank, embeddings])`; no
torch.no_grad() is around it, so the bank's graph reaches every batch's encoder pass and keeps all of
their saved activations until the OOM. --fixed 1 concatenates detached embeddings.
"""

import argparse

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab: int, width: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, nhead=8, dim_feedforward=4 * width, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, tokens):
        return self.encoder(self.embed(tokens)).mean(dim=1)


def index_corpus(model, batches, batch_size, seq_len, width, device, fixed):
    bank = torch.empty(0, width, device=device)
    for batch in range(batches):
        tokens = torch.randint(0, 16000, (batch_size, seq_len), device=device)
        embeddings = model(tokens)
        if fixed:
            embeddings = embeddings.detach()
        bank = torch.cat([bank, embeddings])
        print(f"[progress] batch {batch + 1} done", flush=True)
    return bank


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    width, layers = 512, 6
    if args.dry_run:
        args.batch_size, args.seq_len, args.batches, width, layers = 2, 8, 3, 32, 1
    torch.manual_seed(0)
    model = Encoder(16000, width, layers).to(args.device)
    bank = index_corpus(model, args.batches, args.batch_size, args.seq_len, width, args.device, bool(args.fixed))
    query = bank[:1]
    print(f"bank {tuple(bank.shape)}, best match {(bank @ query.T).squeeze(1).argmax().item()}", flush=True)


if __name__ == "__main__":
    main()
