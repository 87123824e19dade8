# source: https://github.com/open-mmlab/mmsegmentation/issues/3231
# Suggested replacement: bases = torch.rand((B * S, D, R), device=device).
import torch
import torch.nn as nn


class NMF2D(nn.Module):
    def __init__(self, S=1, D=512, R=64):
        super().__init__()
        self.S, self.D, self.R = S, D, R

    def forward(self, x):
        B, C, H, W = x.shape
        x = x.view(B * self.S, self.D, H * W)
        bases = torch.rand((B * self.S, self.D, self.R), device=x.device)
        coef = torch.bmm(x.transpose(1, 2), bases)
        return torch.bmm(bases, coef.transpose(1, 2)).view(B, C, H, W)
