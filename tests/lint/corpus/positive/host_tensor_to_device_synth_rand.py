# source: https://github.com/torchsynth/torchsynth/issues/76
# Tensors are made on the CPU and then moved with .cuda(), which is slow; create them on the device instead.
import torch
import torch.nn as nn


class Noise(nn.Module):
    def __init__(self, batch_size, buffer_size):
        super().__init__()
        self.batch_size = batch_size
        self.buffer_size = buffer_size

    def forward(self, gain):
        noise = torch.rand(self.batch_size, self.buffer_size).cuda()  # expect: host-tensor-to-device
        return gain * (noise * 2 - 1)
