"""An evaluation loop that keeps every batch's logits — computed without torch.no_grad().

After fine-tuning, the script scores a held-out set with a GPT-2 model: for each batch it runs the
model and appends the logits to a list, to compute perplexity and accuracy at the end. Grad mode
is on, so each kept logits tensor also keeps its forward pass's graph: memory grows by a batch of
activations per batch until the OOM. --fixed 1 appends the logits' argmax on the CPU instead.
"""

import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--batches", type=int, default=24)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.seq_len, args.batches = 2, 8, 2
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=16384, n_positions=args.seq_len, n_embd=768, n_layer=6, n_head=12)
    model = GPT2LMHeadModel(config).to(args.device).eval()
    all_logits, all_labels = [], []
    for batch in range(args.batches):
        tokens = torch.randint(0, config.vocab_size, (args.batch_size, args.seq_len), device=args.device)
        logits = model(input_ids=tokens).logits
        if args.fixed:
            all_logits.append(logits.argmax(dim=-1).cpu())
        else:
            all_logits.append(logits)
        all_labels.append(tokens.cpu())
        print(f"[progress] batch {batch + 1} done", flush=True)
    predicted = [l if args.fixed else l.argmax(dim=-1).cpu() for l in all_logits]
    accuracy = sum((p[:, :-1] == t[:, 1:]).float().mean().item() for p, t in zip(predicted, all_labels)) / len(predicted)
    print(f"next-token accuracy {accuracy:.4f}", flush=True)


if __name__ == "__main__":
    main()
