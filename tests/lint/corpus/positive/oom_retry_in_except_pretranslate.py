# source: https://github.com/sillsdev/machine.py/issues/52
# Proposal: catch OutOfMemoryError, empty the cache and run the pretranslation again rather than failing the whole job.
import torch


def pretranslate_all(engine, pretranslations, batch_size):
    results = []
    for batch in pretranslations:
        try:
            results.extend(engine.translate_batch(batch, batch_size))
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            results.extend(engine.translate_batch(batch, batch_size // 2))  # expect: oom-retry-in-except
    return results
