"""Fine-tuning a GPT-2 style language model with the Hugging Face Trainer, batch too large.

The first training step's activations and vocabulary-sized logits do not fit: the OOM comes in
step 1, and halving --batch-size makes it fit. Random weights from a config, random token ids.
"""

import argparse
import tempfile

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments


class RandomTokens(Dataset):
    def __init__(self, samples: int, seq_len: int, vocab: int, seed: int = 0):
        generator = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, vocab, (samples, seq_len), generator=generator)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        return {"input_ids": self.ids[index], "labels": self.ids[index]}


class Progress(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        print(f"[progress] step {state.global_step} done", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--max-steps", type=int, default=3)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.seq_len, args.max_steps = min(args.batch_size, 2), 16, min(args.max_steps, 2)

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=50257, n_positions=args.seq_len, n_embd=512, n_layer=args.layers, n_head=8)
    model = GPT2LMHeadModel(config)
    data = RandomTokens(samples=args.batch_size * args.max_steps, seq_len=args.seq_len, vocab=config.vocab_size)
    with tempfile.TemporaryDirectory() as output_dir:
        training = TrainingArguments(
            output_dir=output_dir,
            per_device_train_batch_size=args.batch_size,
            max_steps=args.max_steps,
            learning_rate=1e-4,
            logging_strategy="no",
            save_strategy="no",
            report_to="none",
            disable_tqdm=True,
            dataloader_num_workers=0,
            use_cpu=args.device == "cpu",
        )
        trainer = Trainer(model=model, args=training, train_dataset=data, callbacks=[Progress()])
        trainer.train()
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
