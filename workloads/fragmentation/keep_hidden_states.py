"""Extracting BERT features batch by batch and keeping every layer's hidden states on the GPU.

Inference over length-grouped batches (each batch padded to its own length) with
output_hidden_states=True; the loop appends each batch's hidden states, still on the GPU, to a
list for later probing. Live memory grows with every batch, and the blocks of varying sizes split
the cache, so the request that finally fails is small while free cached memory exists. The cause
is the growth: with expandable_segments:True the OOM stays. --fixed 1 keeps each layer's [CLS]
vector on the CPU instead.
"""

import argparse
import random

import torch
from transformers import BertConfig, BertModel


def batches(count: int, batch_size: int, longest: int, vocab: int, seed: int):
    rng = random.Random(seed)
    for _ in range(count):
        length = rng.randint(16, longest)
        ids = torch.randint(1, vocab, (batch_size, length), generator=torch.Generator().manual_seed(rng.randrange(2**31)))
        yield ids, torch.ones_like(ids)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--max-len", type=int, default=512)
    parser.add_argument("--fixed", type=int, default=0, help="1: keep each layer's [CLS] vector, on the CPU")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    width = 512 if not args.dry_run else 32
    if args.dry_run:
        args.batch_size, args.batches, args.max_len = min(args.batch_size, 2), min(args.batches, 3), 16

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=width, num_hidden_layers=4, num_attention_heads=8,
                        intermediate_size=4 * width, max_position_embeddings=args.max_len)
    model = BertModel(config).to(args.device).eval()
    features = []
    with torch.inference_mode():
        for index, (ids, mask) in enumerate(batches(args.batches, args.batch_size, args.max_len, config.vocab_size, seed=0)):
            hidden = model(input_ids=ids.to(args.device), attention_mask=mask.to(args.device),
                           output_hidden_states=True).hidden_states
            features.append([layer[:, 0].cpu() for layer in hidden] if args.fixed else hidden)
            print(f"[progress] batch {index + 1} done, length {ids.shape[1]}", flush=True)
    print(f"kept features of {len(features)} batches", flush=True)


if __name__ == "__main__":
    main()
