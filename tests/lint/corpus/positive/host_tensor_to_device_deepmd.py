# source: https://github.com/deepmodeling/deepmd-kit/pull/3421
# torch.tensor(constant) inside forward copies host to device and blocks the CPU; the PR removes it from the loss.
import torch
import torch.nn as nn


class EnergyStdLoss(nn.Module):
    def __init__(self, starter_pref_e, limit_pref_e):
        super().__init__()
        self.starter_pref_e = starter_pref_e
        self.limit_pref_e = limit_pref_e

    def forward(self, model_pred, label, natoms, learning_rate, device):
        coef = learning_rate / 1e-3
        pref_e = self.limit_pref_e + (self.starter_pref_e - self.limit_pref_e) * coef
        atom_norm = torch.tensor(1.0 / natoms).to(device)  # expect: host-tensor-to-device
        diff_e = label["energy"] - model_pred["energy"]
        return pref_e * atom_norm * torch.mean(diff_e * diff_e)
