# source: https://github.com/facebookresearch/fairchem/pull/447
# On OOM during relaxation the batch is split in two and each half is run again, repeated until it fits.
import torch


def relax_batch(batch, run_relaxation):
    try:
        return [run_relaxation(batch)]
    except RuntimeError as e:
        if "out of memory" not in str(e):
            raise
        torch.cuda.empty_cache()
        first, second = batch.split(2)
        return relax_batch(first, run_relaxation) + relax_batch(second, run_relaxation)  # expect: oom-retry-in-except
