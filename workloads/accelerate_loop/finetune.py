"""Fine-tuning a Llama-style causal LM with accelerate: bf16, gradient accumulation, then an evaluation.

The loop is accelerate's documented one (`accelerator.accumulate`, `accelerator.backward`); token ids
are made with torch. Two ways it runs out of memory, chosen by its arguments:
- a --seq-len too long for the card: the first micro-batch's activations (and its vocabulary-sized
  logits) do not fit, so the OOM comes inside the first training step;
- evaluate() puts the model in eval mode but has no torch.no_grad(), and sums `total_loss += loss`:
  each evaluation batch's loss carries its graph, and the running sum keeps every one of those graphs
  (with their saved activations) alive until the OOM after several batches. --fixed 1 sums
  loss.item() instead.
"""

import argparse

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from transformers import LlamaConfig, LlamaForCausalLM, get_linear_schedule_with_warmup


def token_loader(samples: int, seq_len: int, vocab: int, batch_size: int, seed: int, shuffle: bool) -> DataLoader:
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (samples, seq_len), generator=generator)
    return DataLoader(TensorDataset(ids), batch_size=batch_size, shuffle=shuffle, generator=generator)


def evaluate(model, loader, fixed: bool) -> float:
    model.eval()
    total_loss = 0.0
    for index, (ids,) in enumerate(loader):
        loss = model(input_ids=ids, labels=ids).loss
        total_loss += loss.item() if fixed else loss
        print(f"[progress] eval batch {index + 1} done", flush=True)
    model.train()
    return float(total_loss) / max(1, len(loader))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seq-len", type=int, default=1024)
    parser.add_argument("--micro-batch", type=int, default=2)
    parser.add_argument("--accumulation", type=int, default=2, help="gradient_accumulation_steps")
    parser.add_argument("--steps", type=int, default=3, help="optimizer steps")
    parser.add_argument("--eval-batches", type=int, default=0, help="evaluation batches after training (0: none)")
    parser.add_argument("--eval-batch-size", type=int, default=4)
    parser.add_argument("--eval-seq-len", type=int, default=256)
    parser.add_argument("--fixed", type=int, default=0, help="1: sum loss.item() in evaluate()")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    width, layers, vocab = 512, 4, 32000
    if args.dry_run:
        width, layers, vocab = 32, 1, 256
        args.seq_len, args.eval_seq_len = 16, 16
        args.micro_batch, args.eval_batch_size = min(args.micro_batch, 2), min(args.eval_batch_size, 2)
        args.steps, args.eval_batches = min(args.steps, 2), min(args.eval_batches, 2)

    on_cpu = args.device == "cpu"
    accelerator = Accelerator(gradient_accumulation_steps=args.accumulation, mixed_precision="no" if on_cpu else "bf16",
                              cpu=on_cpu)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab, hidden_size=width, intermediate_size=int(2.75 * width), num_hidden_layers=layers,
                         num_attention_heads=8, num_key_value_heads=8,
                         max_position_embeddings=max(args.seq_len, args.eval_seq_len))
    model = LlamaForCausalLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=1, num_training_steps=args.steps)
    train = token_loader(args.steps * args.accumulation * args.micro_batch, args.seq_len, vocab, args.micro_batch,
                         seed=0, shuffle=True)
    held_out = token_loader(max(1, args.eval_batches) * args.eval_batch_size, args.eval_seq_len, vocab,
                            args.eval_batch_size, seed=1, shuffle=False)
    model, optimizer, train, held_out, scheduler = accelerator.prepare(model, optimizer, train, held_out, scheduler)

    model.train()
    completed = 0
    for (ids,) in train:
        with accelerator.accumulate(model):
            loss = model(input_ids=ids, labels=ids).loss
            accelerator.backward(loss)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
        if accelerator.sync_gradients:
            completed += 1
            print(f"[progress] step {completed} done, loss {loss.item():.3f}", flush=True)
    if args.eval_batches:
        print(f"held-out loss {evaluate(model, held_out, bool(args.fixed)):.3f}", flush=True)


if __name__ == "__main__":
    main()
