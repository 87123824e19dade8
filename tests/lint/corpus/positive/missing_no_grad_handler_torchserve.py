# source: https://github.com/pytorch/serve/pull/501
# The default handlers ran inference without no_grad, so process memory went up after every request.
import torch


class ImageClassifier:
    def __init__(self, model, device):
        self.model = model.eval().to(device)
        self.device = device

    def inference(self, data):
        marshalled = data.to(self.device)
        results = self.model(marshalled)  # expect: missing-no-grad
        return torch.softmax(results, dim=1).tolist()
