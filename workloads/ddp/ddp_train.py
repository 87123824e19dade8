"""DistributedDataParallel training launched with torchrun, one process per GPU.

Each rank trains a small transformer language model on its shard of random token ids; with
--batch-size too large for the card, every rank's first training step runs out of memory
(here one rank, as only one GPU is lent). Halving --batch-size makes it fit.
Run: torchrun --standalone --nproc-per-node 1 ddp_train.py --batch-size 48
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


class TinyLanguageModel(nn.Module):
    def __init__(self, vocab: int, width: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        block = nn.TransformerEncoderLayer(width, nhead=8, dim_feedforward=4 * width, batch_first=True)
        self.blocks = nn.TransformerEncoder(block, num_layers=layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        return self.head(self.blocks(self.embed(tokens)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=48)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.seq_len, args.steps = min(args.batch_size, 2), 8, min(args.steps, 2)

    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if args.device == "cuda":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    vocab = 32000
    model = DistributedDataParallel(TinyLanguageModel(vocab, width=512, layers=4).to(device),
                                    device_ids=[local_rank] if args.device == "cuda" else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    generator = torch.Generator().manual_seed(rank)
    try:
        for step in range(args.steps):
            tokens = torch.randint(0, vocab, (args.batch_size, args.seq_len + 1), generator=generator).to(device)
            logits = model(tokens[:, :-1])
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            print(f"[progress] rank {rank} step {step + 1} done, loss {loss.item():.3f}", flush=True)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
