"""A LightningModule that collects its training_step outputs for an epoch-end metric, as Lightning 2's
migration guide shows (`self.training_step_outputs.append(...)`, then `on_train_epoch_end`).

It appends each step's full logits (batch x sequence x vocabulary, on the GPU) where the metric needs
only the predicted ids: after backward() the graph is gone, but the logits themselves stay in the list,
one batch more every training step, until the OOM in the middle of the epoch. --fixed 1 appends the
predicted ids, detached, and clears the list at the end of the epoch.
"""

import argparse

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class CausalLM(L.LightningModule):
    def __init__(self, vocab: int, width: int, layers: int, fixed: bool):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        block = nn.TransformerEncoderLayer(width, nhead=8, dim_feedforward=4 * width, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, num_layers=layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)
        self.fixed = fixed
        self.training_step_outputs = []

    def forward(self, tokens):
        causal = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1], device=tokens.device)
        return self.head(self.blocks(self.embed(tokens), mask=causal, is_causal=True))

    def training_step(self, batch, batch_index):
        tokens, = batch
        logits = self(tokens[:, :-1])
        targets = tokens[:, 1:]
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        self.training_step_outputs.append(
            {"preds": logits.argmax(dim=-1).detach(), "targets": targets} if self.fixed else {"logits": logits, "targets": targets})
        self.log("train_loss", loss)
        return loss

    def on_train_batch_end(self, outputs, batch, batch_index):
        print(f"[progress] epoch {self.current_epoch} step {batch_index + 1} done", flush=True)

    def on_train_epoch_end(self):
        preds = torch.cat([o["preds"] if self.fixed else o["logits"].argmax(dim=-1) for o in self.training_step_outputs])
        targets = torch.cat([o["targets"] for o in self.training_step_outputs])
        self.log("train_token_accuracy", (preds == targets).float().mean())
        if self.fixed:
            self.training_step_outputs.clear()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=3e-4)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--train-batches", type=int, default=24)
    parser.add_argument("--fixed", type=int, default=0, help="1: keep detached predicted ids, cleared every epoch")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    vocab, width, layers = 32000, 256, 2
    if args.dry_run:
        vocab, width, layers = 256, 32, 1
        args.batch_size, args.seq_len, args.train_batches = min(args.batch_size, 2), 8, min(args.train_batches, 3)

    L.seed_everything(0, verbose=False)
    model = CausalLM(vocab, width, layers, fixed=bool(args.fixed))
    gpu = args.device == "cuda"
    trainer = L.Trainer(
        accelerator="gpu" if gpu else "cpu", devices=1, precision="bf16-mixed" if gpu else "32-true", max_epochs=1,
        limit_train_batches=args.train_batches, enable_checkpointing=False, logger=False, enable_progress_bar=False,
        enable_model_summary=False,
    )
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocab, (args.train_batches * args.batch_size, args.seq_len + 1), generator=generator)
    trainer.fit(model, DataLoader(TensorDataset(tokens), batch_size=args.batch_size, shuffle=True, generator=generator))
    print(f"fit finished after {trainer.global_step} steps", flush=True)


if __name__ == "__main__":
    main()
