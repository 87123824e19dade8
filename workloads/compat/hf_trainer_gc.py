"""transformers' Trainer with gradient_checkpointing (reentrant or not), bf16 (random weights)."""
import argparse
import time

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments
from transformers.trainer_callback import PrinterCallback

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--reentrant", action="store_true")
parser.add_argument("--out", default="/tmp/compat_trainer")
args = parser.parse_args()
torch.manual_seed(0)


class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 512

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(index)
        return {"input_ids": torch.randint(0, 30000, (128,), generator=g), "labels": int(index % 2)}


class StepTimes(TrainerCallback):
    def on_step_begin(self, *a, **k):
        torch.cuda.synchronize()
        self.began = time.perf_counter()

    def on_step_end(self, *a, **k):
        torch.cuda.synchronize()
        print(f"step_ms {1000 * (time.perf_counter() - self.began):.3f}", flush=True)


model = BertForSequenceClassification(BertConfig(hidden_size=768, num_hidden_layers=12, num_labels=2))
training = TrainingArguments(output_dir=args.out, per_device_train_batch_size=16, max_steps=args.steps, bf16=True,
                             gradient_checkpointing=True,
                             gradient_checkpointing_kwargs={"use_reentrant": args.reentrant},
                             report_to=[], disable_tqdm=True, logging_strategy="no", save_strategy="no",
                             dataloader_num_workers=0, seed=0)
trainer = Trainer(model=model, args=training, train_dataset=Data(), callbacks=[StepTimes()])
trainer.remove_callback(PrinterCallback)  # it prints the run's timings (train_runtime, samples per second)
result = trainer.train()
print("trained steps", result.global_step)
