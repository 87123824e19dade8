# source: https://github.com/OpenNMT/OpenNMT-py/pull/2550
# On a CUDA OOM the PR recomputes the gradients with a new batch inside the handler; trying it with a big batch still failed.
import torch


def gradient_accumulation(model, train_iter, loss_fn, batch):
    try:
        loss = loss_fn(model(batch.src, batch.tgt), batch.tgt)
        loss.backward()
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        batch = next(train_iter)
        loss = loss_fn(model(batch.src, batch.tgt), batch.tgt)  # expect: oom-retry-in-except
        loss.backward()
