# source: https://discuss.pytorch.org/t/about-torch-cuda-empty-cache/34232/2
# Calling empty_cache after each batch; a core developer says it should not be used except in edge cases and makes code slower.
import torch


def train_epoch(model, loader, optimizer, criterion):
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs.cuda()), targets.cuda())
        loss.backward()
        optimizer.step()
        del loss
        torch.cuda.empty_cache()  # expect: empty-cache-in-loop
