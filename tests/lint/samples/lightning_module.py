# Shaped after a widely copied example; clean code except where a test says otherwise.
import torch
import lightning as L

class LitModel(L.LightningModule):
    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.loss_fn(self.model(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", self.loss_fn(self.model(x), y))
