# source: https://github.com/JIA-Lab-research/DecoupleNet/issues/3
# Loss terms are collected per step in a list that is rebuilt every iteration, so the graphs are freed before the next step.
import torch


def train(model, loader, optimizer, loss_fns):
    for images, labels in loader:
        step_losses = []
        outputs = model(images)
        for loss_fn in loss_fns:
            step_losses.append(loss_fn(outputs, labels))
        loss = torch.stack(step_losses).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(loss.item())
