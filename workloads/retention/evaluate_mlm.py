"""Trainer.evaluate() on a BERT masked-language model with compute_metrics: predictions gathered on the GPU.

With compute_metrics set and eval_accumulation_steps unset, the evaluation loop keeps every batch's
vocabulary-sized prediction scores on the GPU until the end of evaluation, so a large evaluation
set runs out of memory part-way. --eval-accumulation-steps 1 moves them to the CPU after every step.
"""

import argparse

import numpy as np
import torch
from transformers import BertConfig, BertForMaskedLM, Trainer, TrainingArguments


class MaskedTokens(torch.utils.data.Dataset):
    def __init__(self, samples: int, seq_len: int, vocab: int):
        generator = torch.Generator().manual_seed(0)
        self.tokens = torch.randint(5, vocab, (samples, seq_len), generator=generator)

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, index):
        tokens = self.tokens[index].clone()
        labels = torch.full_like(tokens, -100)
        labels[::7] = tokens[::7]
        tokens[::7] = 4  # [MASK]
        return {"input_ids": tokens, "attention_mask": torch.ones_like(tokens), "labels": labels}


def accuracy(prediction):
    predicted = prediction.predictions.argmax(-1)
    mask = prediction.label_ids != -100
    return {"masked_accuracy": float(np.mean(predicted[mask] == prediction.label_ids[mask]))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--eval-samples", type=int, default=256)
    parser.add_argument("--eval-batch-size", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--eval-accumulation-steps", type=int, default=None)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    if args.dry_run:
        args.eval_samples, args.eval_batch_size, args.seq_len = 4, 2, 16
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
                        intermediate_size=2048, max_position_embeddings=512)
    model = BertForMaskedLM(config)
    training = TrainingArguments(output_dir="mlm-eval", per_device_eval_batch_size=args.eval_batch_size,
                                 eval_accumulation_steps=args.eval_accumulation_steps, report_to=[],
                                 use_cpu=args.device == "cpu", dataloader_num_workers=0)

    class Progress(__import__("transformers").TrainerCallback):
        def on_prediction_step(self, args_, state, control, **kwargs):
            print("[progress] eval batch done", flush=True)

    trainer = Trainer(model=model, args=training, eval_dataset=MaskedTokens(args.eval_samples, args.seq_len, config.vocab_size),
                      compute_metrics=accuracy, callbacks=[Progress()])
    print(trainer.evaluate(), flush=True)


if __name__ == "__main__":
    main()
