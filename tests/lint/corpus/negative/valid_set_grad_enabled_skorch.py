# source: https://github.com/skorch-dev/skorch/pull/219
# Bugfix: the validation step disables autograd so evaluation stops running out of memory.
import torch


class NeuralNet:
    def __init__(self, module, criterion):
        self.module_ = module
        self.criterion_ = criterion

    def validation_step(self, Xi, yi):
        self.module_.eval()
        with torch.set_grad_enabled(False):
            y_pred = self.module_(Xi)
            loss = self.criterion_(y_pred, yi)
        return {"loss": loss.item(), "y_pred": y_pred}
