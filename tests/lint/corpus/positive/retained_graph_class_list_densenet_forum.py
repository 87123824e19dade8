# source: https://discuss.pytorch.org/t/cuda-out-of-memory-error-understanding-how-pytorch-stores-class-variable/13778
# A DenseNet layer saves every batch's output in a class-level list; the saved outputs keep their graphs and exhaust GPU memory.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Bottleneck(nn.Module):
    out_saved = [0] * 900

    def __init__(self, n_channels, growth_rate):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(n_channels)
        self.conv1 = nn.Conv2d(n_channels, growth_rate, kernel_size=3, padding=1)
        self.counter = 0

    def forward(self, x):
        out = self.conv1(F.relu(self.bn1(x)))
        out = torch.cat((x, out), 1)
        Bottleneck.out_saved[self.counter] = out  # expect: retained-graph
        self.counter += 1
        return out
