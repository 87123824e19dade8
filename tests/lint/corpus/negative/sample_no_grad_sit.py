# source: https://github.com/willisma/SiT/pull/43
# "Simply use torch.no_grad() to avoid OOM" when sampling during training.
import torch


def log_samples(model, sample_fn, zs, ys, step, log_every):
    if step % log_every == 0:
        model.eval()
        with torch.no_grad():
            samples = sample_fn(zs, model.forward, y=ys)
        model.train()
        return samples
    return None
