"""Lightning Trainer.fit with precision="bf16-mixed" on a small MLP."""
import time

import lightning as L
import torch
from torch import nn

L.seed_everything(0, verbose=False)


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 10))

    def training_step(self, batch, index):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

    def on_train_batch_start(self, batch, index):
        torch.cuda.synchronize()
        self.began = time.perf_counter()

    def on_train_batch_end(self, outputs, batch, index):
        torch.cuda.synchronize()
        print(f"step_ms {1000 * (time.perf_counter() - self.began):.3f}")


data = torch.utils.data.TensorDataset(torch.randn(4096, 512), torch.randint(0, 10, (4096,)))
trainer = L.Trainer(accelerator="gpu", devices=1, precision="bf16-mixed", max_epochs=2, logger=False,
                    enable_progress_bar=False, enable_checkpointing=False, enable_model_summary=False)
trainer.fit(Model(), torch.utils.data.DataLoader(data, batch_size=128))
print("global steps", trainer.global_step)
