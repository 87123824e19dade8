"""A LightningModule that collects validation outputs in self.val_outputs and never clears them.

validation_step appends each batch's logits (on the GPU) to self.val_outputs to compute a metric at
the end of the epoch, but the list is never emptied: it grows by every validation batch of every
epoch until validation runs out of memory. --fixed 1 keeps only the predicted ids and clears the
list at the end of each validation epoch, as Lightning's docs show.
"""

import argparse

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class TinyLanguageModel(L.LightningModule):
    def __init__(self, vocab: int, width: int, layers: int, fixed: bool):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        block = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=4 * width, batch_first=True)
        self.blocks = nn.TransformerEncoder(block, num_layers=layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)
        self.fixed = fixed
        self.val_outputs = []

    def forward(self, tokens):
        return self.head(self.blocks(self.embed(tokens)))

    def training_step(self, batch, batch_index):
        tokens, = batch
        logits = self(tokens[:, :-1])
        return nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())

    def validation_step(self, batch, batch_index):
        tokens, = batch
        logits = self(tokens[:, :-1])
        self.val_outputs.append(logits.argmax(dim=-1) if self.fixed else logits)

    def on_validation_batch_end(self, outputs, batch, batch_index, dataloader_idx=0):
        print(f"[progress] epoch {self.current_epoch} val batch {batch_index + 1} done", flush=True)

    def on_validation_epoch_end(self):
        kept = [outputs if self.fixed else outputs.argmax(dim=-1) for outputs in self.val_outputs]
        self.log("val_kept_batches", float(len(kept)))
        if self.fixed:
            self.val_outputs.clear()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


def loader(samples: int, seq_len: int, vocab: int, batch_size: int, seed: int) -> DataLoader:
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab, (samples, seq_len + 1), generator=generator)
    return DataLoader(TensorDataset(tokens), batch_size=batch_size)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--val-batches", type=int, default=4)
    parser.add_argument("--max-epochs", type=int, default=8)
    parser.add_argument("--fixed", type=int, default=0, help="1: keep predicted ids only and clear them every epoch")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.seq_len, args.max_epochs = min(args.batch_size, 2), 8, min(args.max_epochs, 2)

    vocab = 32000
    L.seed_everything(0, verbose=False)
    model = TinyLanguageModel(vocab, width=256, layers=2, fixed=bool(args.fixed))
    trainer = L.Trainer(
        accelerator="gpu" if args.device == "cuda" else "cpu", devices=1, max_epochs=args.max_epochs,
        limit_train_batches=2, limit_val_batches=args.val_batches, num_sanity_val_steps=0,
        enable_checkpointing=False, logger=False, enable_progress_bar=False, enable_model_summary=False,
    )
    train = loader(2 * args.batch_size, args.seq_len, vocab, args.batch_size, seed=0)
    val = loader(args.val_batches * args.batch_size, args.seq_len, vocab, args.batch_size, seed=1)
    trainer.fit(model, train, val)
    print(f"fit finished after {trainer.current_epoch} epochs", flush=True)


if __name__ == "__main__":
    main()
