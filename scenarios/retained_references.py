"""An evaluation loop that keeps every output, graph and all, so memory grows until it fails.

Recorded with: vramlens run --memory-limit 3GiB scenarios/retained_references.py
Expected cause: retained_references (each batch's saved activations stay live).
"""

import torch
from torch import nn


def build_model() -> nn.Module:
    return nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()


def evaluate(model: nn.Module, batches: int, batch_size: int):
    model.eval()
    outputs = []
    for _ in range(batches):
        x = torch.randn(batch_size, 1024, device="cuda")  # vramlens: culprit
        out = model(x)  # vramlens: culprit
        outputs.append(out)  # kept with its autograd graph: nothing of this batch is freed
    return torch.cat(outputs)


if __name__ == "__main__":
    predictions = evaluate(build_model(), batches=400, batch_size=4096)
    print(predictions.shape)
