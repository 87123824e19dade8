# source: https://github.com/NVIDIA-AI-IOT/jetbot/pull/117
# train_loss and test_loss accumulate GPU tensors for the whole epoch; the fix wraps them in float().
import torch.nn.functional as F


def run_epoch(model, optimizer, train_loader, test_loader):
    model.train()
    train_loss = 0.0
    for images, labels in train_loader:
        optimizer.zero_grad()
        outputs = model(images)
        loss = F.mse_loss(outputs, labels)
        train_loss += loss  # expect: retained-graph
        loss.backward()
        optimizer.step()
    return train_loss / len(train_loader)
