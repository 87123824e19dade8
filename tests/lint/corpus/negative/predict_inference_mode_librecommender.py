# source: https://github.com/massquantity/LibRecommender/pull/356
# Replaces torch.no_grad with torch.inference_mode for prediction.
import torch


class TorchModel:
    def __init__(self, model):
        self.model = model

    @torch.inference_mode()
    def predict(self, user, item):
        self.model.eval()
        preds = self.model(user, item)
        return preds.cpu().numpy()
