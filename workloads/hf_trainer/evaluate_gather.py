"""Trainer.evaluate() with compute_metrics: the evaluation loop gathers every batch's logits on the GPU.

With eval_accumulation_steps unset, transformers keeps all predictions on the device, concatenated
batch after batch (EvalLoopContainer), until compute_metrics runs at the end: vocabulary-sized
logits grow by one batch per evaluation step until the card is full. With
--eval-accumulation-steps 1 they are moved to the CPU after every step and the evaluation completes.
"""

import argparse
import tempfile

import numpy as np
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments


class RandomTokens(Dataset):
    def __init__(self, samples: int, seq_len: int, vocab: int, seed: int):
        generator = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, vocab, (samples, seq_len), generator=generator)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        return {"input_ids": self.ids[index], "labels": self.ids[index]}


class Progress(TrainerCallback):
    def __init__(self):
        self.eval_batches = 0

    def on_step_end(self, args, state, control, **kwargs):
        print(f"[progress] train step {state.global_step} done", flush=True)

    def on_prediction_step(self, args, state, control, **kwargs):
        self.eval_batches += 1
        print(f"[progress] eval batch {self.eval_batches} done", flush=True)


def token_accuracy(prediction) -> dict:
    predicted = np.argmax(prediction.predictions, axis=-1)[:, :-1]
    expected = prediction.label_ids[:, 1:]
    return {"token_accuracy": float((predicted == expected).mean())}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--eval-samples", type=int, default=128)
    parser.add_argument("--eval-batch-size", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=96)
    parser.add_argument("--eval-accumulation-steps", type=int, default=None,
                        help="move gathered predictions to the CPU every N evaluation steps (unset: keep them on the GPU)")
    parser.add_argument("--train-steps", type=int, default=2)
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.eval_samples, args.eval_batch_size, args.seq_len = min(args.eval_samples, 8), 2, 16

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=32000, n_positions=args.seq_len, n_embd=256, n_layer=2, n_head=4,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)
    train = RandomTokens(samples=8 * args.train_steps, seq_len=args.seq_len, vocab=config.vocab_size, seed=0)
    evaluation = RandomTokens(samples=args.eval_samples, seq_len=args.seq_len, vocab=config.vocab_size, seed=1)
    with tempfile.TemporaryDirectory() as output_dir:
        training = TrainingArguments(
            output_dir=output_dir,
            per_device_train_batch_size=8,
            per_device_eval_batch_size=args.eval_batch_size,
            eval_accumulation_steps=args.eval_accumulation_steps,
            max_steps=args.train_steps,
            logging_strategy="no",
            save_strategy="no",
            report_to="none",
            disable_tqdm=True,
            dataloader_num_workers=0,
            use_cpu=args.device == "cpu",
        )
        trainer = Trainer(model=model, args=training, train_dataset=train, eval_dataset=evaluation,
                          compute_metrics=token_accuracy, callbacks=[Progress()])
        trainer.train()
        metrics = trainer.evaluate()
    print(f"evaluation finished: {metrics}", flush=True)


if __name__ == "__main__":
    main()
