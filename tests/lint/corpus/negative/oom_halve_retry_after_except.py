# source: https://github.com/NVIDIA/Model-Optimizer/pull/1385
# Batch-size probe: the except clause only halves the size; the retry happens on the next loop turn, outside the handler.
import torch


def get_max_batch_size(infer_method, sample_input, target_data_batch):
    while target_data_batch > 1:
        target_input = sample_input.expand(target_data_batch, *sample_input.shape[1:])
        try:
            infer_method(target_input)
            break
        except torch.cuda.OutOfMemoryError:
            target_data_batch = target_data_batch // 2
    return target_data_batch
