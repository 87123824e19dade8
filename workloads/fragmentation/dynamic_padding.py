"""Fine-tuning a BERT-style classifier with dynamic padding: every batch has its own length.

DataCollatorWithPadding pads each batch to its longest sequence, so every step asks the caching
allocator for blocks of new sizes, while the gradients and AdamW's state created in the first
step stay where they were put. The cache ends up split into free pieces that sit in segments
the allocator cannot release, and a request that fits the total free memory finds no piece big
enough. Under a cap between the packed peak and the reserved peak this runs out of memory;
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets the allocator map the free pages anew.
"""

import argparse
import random

import torch
from transformers import BertConfig, BertForSequenceClassification, DataCollatorWithPadding


class IdsOnly:
    """The part of a tokenizer the collator needs: ids are made with torch, nothing is downloaded."""

    pad_token_id = 0
    padding_side = "right"
    model_input_names = ["input_ids", "token_type_ids", "attention_mask"]

    def pad(self, features, padding=True, max_length=None, pad_to_multiple_of=None, return_tensors="pt", **kwargs):
        longest = max(len(feature["input_ids"]) for feature in features)
        ids = torch.zeros(len(features), longest, dtype=torch.long)
        mask = torch.zeros(len(features), longest, dtype=torch.long)
        for row, feature in enumerate(features):
            ids[row, : len(feature["input_ids"])] = torch.tensor(feature["input_ids"])
            mask[row, : len(feature["input_ids"])] = 1
        labels = torch.tensor([feature["labels"] for feature in features])
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def examples(batches: int, batch_size: int, longest: int, vocab: int, seed: int) -> list[dict]:
    """Length-grouped batches, as a length-grouped sampler yields them: each batch has its own length."""
    rng = random.Random(seed)
    data = []
    for _ in range(batches):
        batch_longest = rng.randint(16, longest)
        lengths = [batch_longest] + [rng.randint(batch_longest // 2, batch_longest) for _ in range(batch_size - 1)]
        data += [{"input_ids": [rng.randrange(1, vocab) for _ in range(length)], "labels": rng.randrange(2)}
                 for length in lengths]
    return data


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--max-len", type=int, default=512)
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    width, layers = (512, 4) if not args.dry_run else (32, 1)
    if args.dry_run:
        args.batch_size, args.steps, args.max_len = min(args.batch_size, 2), min(args.steps, 3), 16

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=width, num_hidden_layers=layers, num_attention_heads=8,
                        intermediate_size=4 * width, max_position_embeddings=args.max_len, num_labels=2)
    model = BertForSequenceClassification(config).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    collate = DataCollatorWithPadding(IdsOnly())
    data = examples(args.steps, args.batch_size, args.max_len, config.vocab_size, seed=0)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size, collate_fn=collate)
    for step, batch in enumerate(loader):
        batch = {name: tensor.to(args.device) for name, tensor in batch.items()}
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"[progress] step {step + 1} done, length {batch['input_ids'].shape[1]}, loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
