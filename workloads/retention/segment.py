"""A LightningModule for semantic segmentation that keeps every validation batch's logits.

validation_step appends the per-pixel logits (batch x classes x H x W, on the GPU) to
self.val_outputs to compute the mean IoU at the end of the epoch. The list is never cleared and
the logits are kept whole, so validation grows by a batch of logits per step until the OOM.
--fixed 1 keeps the predicted class map, detached on the CPU, and clears it every epoch.
"""

import argparse

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class SegmentationModule(L.LightningModule):
    def __init__(self, classes: int, fixed: bool):
        super().__init__()
        self.net = nn.Sequential(block(3, 32), block(32, 64), block(64, 64), nn.Conv2d(64, classes, 1))
        self.fixed = fixed
        self.val_outputs = []

    def forward(self, images):
        return self.net(images)

    def training_step(self, batch, batch_index):
        images, masks = batch
        return nn.functional.cross_entropy(self(images), masks)

    def validation_step(self, batch, batch_index):
        images, masks = batch
        logits = self(images)
        if self.fixed:
            self.val_outputs.append(logits.argmax(dim=1).detach().cpu())
        else:
            self.val_outputs.append(logits)

    def on_validation_batch_end(self, outputs, batch, batch_index, dataloader_idx=0):
        print(f"[progress] val batch {batch_index + 1} done", flush=True)

    def on_validation_epoch_end(self):
        predicted = [out if self.fixed else out.argmax(dim=1) for out in self.val_outputs]
        self.log("val_batches", float(len(predicted)))
        if self.fixed:
            self.val_outputs.clear()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


def loader(samples, size, classes, batch_size, seed):
    generator = torch.Generator().manual_seed(seed)
    images = torch.randn(samples, 3, size, size, generator=generator)
    masks = torch.randint(0, classes, (samples, size, size), generator=generator)
    return DataLoader(TensorDataset(images, masks), batch_size=batch_size)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--classes", type=int, default=150)
    parser.add_argument("--val-batches", type=int, default=24)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.size, args.classes, args.val_batches = 2, 16, 4, 2
    torch.manual_seed(0)
    module = SegmentationModule(args.classes, bool(args.fixed))
    trainer = L.Trainer(accelerator="cpu" if args.device == "cpu" else "gpu", devices=1, max_epochs=1,
                        limit_train_batches=2, num_sanity_val_steps=0, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(module, loader(2 * args.batch_size, args.size, args.classes, args.batch_size, 0),
                loader(args.val_batches * args.batch_size, args.size, args.classes, args.batch_size, 1))
    print("done", flush=True)


if __name__ == "__main__":
    main()
