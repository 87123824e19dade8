"""Feature extraction that keeps every layer's hidden states of a BERT encoder, with autograd on.

`model(input_ids, output_hidden_states=True)` returns one hidden-state tensor per layer; the loop keeps
`outputs.hidden_states` of every batch in a list for probing later, without torch.no_grad(), so each
batch's thirteen tensors and their graph stay on the GPU until the OOM. --fixed 1 keeps the last layer's
states on the CPU.
"""

import argparse

import torch
from transformers import BertConfig, BertModel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    config = BertConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
    if args.dry_run:
        args.batch_size, args.seq_len, args.batches = 2, 8, 3
        config = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    torch.manual_seed(0)
    model = BertModel(config).to(args.device)
    model.eval()
    probes = []
    for batch in range(args.batches):
        input_ids = torch.randint(0, config.vocab_size, (args.batch_size, args.seq_len), device=args.device)
        outputs = model(input_ids=input_ids, output_hidden_states=True)
        kept = (outputs.hidden_states[-1].detach().cpu(),) if args.fixed else outputs.hidden_states
        probes.append(kept)
        print(f"[progress] batch {batch + 1} done", flush=True)
    print(f"kept {len(probes)} batches of {len(probes[0])} hidden-state tensors", flush=True)


if __name__ == "__main__":
    main()
