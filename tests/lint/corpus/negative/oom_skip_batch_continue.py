# source: https://github.com/pytorch/pytorch/issues/48365
# Catch the OOM, clean up and skip to the next batch (no retry inside the handler).
import gc

import torch


def train(data_loader, do_iteration, optimizer):
    for sample in data_loader:
        try:
            do_iteration(sample)
        except RuntimeError as e:
            if "out of memory" in str(e):
                optimizer.zero_grad()
                gc.collect()
                torch.cuda.empty_cache()
                continue
            raise
