# source: https://github.com/ludwig-ai/ludwig/pull/1739
# Batch prediction ran with autograd on; the fix adds torch.no_grad to reduce memory pressure.
import torch


class Predictor:
    def __init__(self, model):
        self.model = model

    def batch_predict(self, dataset, batch_size=128):
        self.model.eval()
        predictions = []
        for start in range(0, len(dataset), batch_size):
            batch = dataset[start:start + batch_size]
            preds = self.model(batch)  # expect: missing-no-grad
            predictions.append(preds.detach().cpu())
        return torch.cat(predictions)
