# source: https://github.com/growingnet/gromo/issues/135
# forward() stores its output on self without detach, which the maintainers call a memory leak; fixed with y.detach().
import torch.nn as nn


class MergeGrowingModule(nn.Module):
    def __init__(self, post_merge_function=None, store_activity=True):
        super().__init__()
        self.post_merge_function = post_merge_function
        self.store_activity = store_activity
        self.activity = None

    def forward(self, x):
        if self.post_merge_function is not None:
            y = self.post_merge_function(x)
        else:
            y = x
        if self.store_activity:
            self.activity = y  # expect: retained-graph
        return y
