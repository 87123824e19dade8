# source: https://github.com/torchsynth/torchsynth/issues/76
# The recommended form: create the tensor directly on the device with device=.
import torch
import torch.nn as nn


class Noise(nn.Module):
    def __init__(self, batch_size, buffer_size, device):
        super().__init__()
        self.batch_size = batch_size
        self.buffer_size = buffer_size
        self.device = device

    def forward(self, gain):
        noise = torch.rand(self.batch_size, self.buffer_size, device=self.device)
        return gain * (noise * 2 - 1)
