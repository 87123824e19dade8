# source: https://github.com/MultimediaTechLab/YOLO/pull/83
# Per-name loss totals were kept as device tensors in a defaultdict and leaked memory every batch; floats + .item() fixed it.
from collections import defaultdict

import torch


def train_one_epoch(model, loss_fn, dataloader, optimizer, device):
    total_loss = defaultdict(lambda: torch.tensor(0.0, device=device))
    for images, targets in dataloader:
        predicts = model(images)
        loss, loss_item = loss_fn(predicts, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        for loss_name, loss_val in loss_item.items():
            total_loss[loss_name] += loss_val * images.size(0)  # expect: retained-graph
    return total_loss
