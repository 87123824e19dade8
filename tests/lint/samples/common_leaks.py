# Common leaks seen in training code; the test lists the lines that must be flagged.
import torch

def train(model, loader, optimizer, criterion):
    history = {"loss": []}
    metrics = {}
    hidden = None
    for x, y in loader:
        out = model(x)
        loss = criterion(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history["loss"].append(loss)
        metrics["last"] = loss
        writer.add_scalar("loss", loss, 0)

class Trainer:
    def __init__(self, model):
        self.model = model
        self.losses = []

    def train_step(self, batch):
        loss = self.model(batch).mean()
        loss.backward()
        self.losses.append(loss)
        return loss

def evaluate(model, loader):
    model.eval()
    preds = []
    for x in loader:
        preds.append(model(x))
    return torch.cat(preds)
