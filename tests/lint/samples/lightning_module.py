# A LightningModule's steps: Lightning runs validation under no_grad and logging takes care of
# detaching. Nothing here should be reported.
import lightning as L


class Classifier(L.LightningModule):
    def training_step(self, batch, batch_idx):
        inputs, labels = batch
        loss = self.criterion(self.network(inputs), labels)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        inputs, labels = batch
        self.log("val_loss", self.criterion(self.network(inputs), labels))
