# source: https://github.com/growingnet/gromo/issues/135
# The fix: store y.detach() on self instead of y.
import torch.nn as nn


class MergeGrowingModule(nn.Module):
    def __init__(self, post_merge_function=None, store_activity=True):
        super().__init__()
        self.post_merge_function = post_merge_function
        self.store_activity = store_activity
        self.activity = None

    def forward(self, x):
        y = self.post_merge_function(x) if self.post_merge_function is not None else x
        if self.store_activity:
            self.activity = y.detach()
        return y
