# source: https://theneuralbase.com/pytorch/errors/torch-cuda-out-of-memory-training-large-model/
# Advises catching "CUDA out of memory", emptying the cache, halving the batch and retrying the forward pass.
import torch


def train_step(model, loss_fn, optimizer, data, targets):
    try:
        loss = loss_fn(model(data), targets)
    except RuntimeError as e:
        if "CUDA out of memory" not in str(e):
            raise
        torch.cuda.empty_cache()
        half = data.size(0) // 2
        loss = loss_fn(model(data[:half]), targets[:half])  # expect: oom-retry-in-except
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
