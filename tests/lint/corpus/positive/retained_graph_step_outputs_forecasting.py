# source: https://github.com/sktime/pytorch-forecasting/pull/1924
# The log dict of every step (loss included) was appended to training_step_outputs, keeping each batch's graph for the epoch.
import torch.nn as nn


class BaseModel(nn.Module):
    def __init__(self, net, loss_fn):
        super().__init__()
        self.net = net
        self.loss_fn = loss_fn
        self.training_step_outputs = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        prediction = self.net(x)
        loss = self.loss_fn(prediction, y)
        log = {"loss": loss, "n_samples": x.size(0)}
        self.training_step_outputs.append(log)  # expect: retained-graph
        return log
