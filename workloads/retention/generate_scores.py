"""Batch generation that keeps each batch's per-token scores for a later calibration study.

`model.generate(..., output_scores=True, return_dict_in_generate=True)` returns one
vocabulary-sized score tensor per new token; `all_scores.append(out.scores)` keeps them on the GPU
for every batch of prompts, so memory grows by a batch's scores per batch until the OOM.
--fixed 1 keeps only the chosen token's score, on the CPU.
"""

import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.batches, args.new_tokens = 2, 2, 4
    torch.manual_seed(0)
    config = GPT2Config(n_embd=512, n_layer=4, n_head=8)
    model = GPT2LMHeadModel(config).to(args.device).eval()
    all_scores = []
    for batch in range(args.batches):
        prompts = torch.randint(0, config.vocab_size, (args.batch_size, 32), device=args.device)
        out = model.generate(prompts, attention_mask=torch.ones_like(prompts), max_new_tokens=args.new_tokens,
                             min_new_tokens=args.new_tokens, do_sample=False, output_scores=True,
                             return_dict_in_generate=True, pad_token_id=0)
        if args.fixed:
            chosen = out.sequences[:, prompts.shape[1]:]
            out.scores = tuple(s.gather(1, chosen[:, i:i + 1]).cpu() for i, s in enumerate(out.scores))
        all_scores.append(out.scores)
        print(f"[progress] batch {batch + 1} done", flush=True)
    print(f"kept scores of {len(all_scores)} batches", flush=True)


if __name__ == "__main__":
    main()
