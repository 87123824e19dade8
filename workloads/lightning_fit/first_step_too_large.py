"""Lightning fit() whose first training step is too large for the card.

A small transformer language model trained with a batch that is too large: the activations and
vocabulary-sized logits of the first training_step do not fit, and halving --batch-size makes it
fit. Nothing is kept between steps.
"""

import argparse

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class TinyLanguageModel(L.LightningModule):
    def __init__(self, vocab: int, width: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        block = nn.TransformerEncoderLayer(width, nhead=8, dim_feedforward=4 * width, batch_first=True)
        self.blocks = nn.TransformerEncoder(block, num_layers=layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)

    def training_step(self, batch, batch_index):
        tokens, = batch
        logits = self.head(self.blocks(self.embed(tokens[:, :-1])))
        return nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())

    def on_train_batch_end(self, outputs, batch, batch_index):
        print(f"[progress] step {self.global_step} done", flush=True)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=48)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--max-steps", type=int, default=3)
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.seq_len, args.max_steps = min(args.batch_size, 2), 8, min(args.max_steps, 2)

    vocab = 32000
    L.seed_everything(0, verbose=False)
    model = TinyLanguageModel(vocab, width=512, layers=4)
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocab, (args.batch_size * args.max_steps, args.seq_len + 1), generator=generator)
    trainer = L.Trainer(
        accelerator="gpu" if args.device == "cuda" else "cpu", devices=1, max_steps=args.max_steps,
        enable_checkpointing=False, logger=False, enable_progress_bar=False, enable_model_summary=False,
    )
    trainer.fit(model, DataLoader(TensorDataset(tokens), batch_size=args.batch_size))
    print(f"fit finished at step {trainer.global_step}", flush=True)


if __name__ == "__main__":
    main()
