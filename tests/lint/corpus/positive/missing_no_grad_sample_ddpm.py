# source: https://github.com/TeaPearce/Conditional_Diffusion_MNIST/issues/12
# Sampling from the trained model consumes a lot of memory; the reporter detaches x_i at the end of each step.
import torch
import torch.nn as nn


class DDPM(nn.Module):
    def __init__(self, nn_model, n_T, oneover_sqrta, mab_over_sqrtmab, sqrt_beta_t, device):
        super().__init__()
        self.nn_model = nn_model.to(device)
        self.n_T = n_T
        self.oneover_sqrta = oneover_sqrta
        self.mab_over_sqrtmab = mab_over_sqrtmab
        self.sqrt_beta_t = sqrt_beta_t
        self.device = device

    def sample(self, n_sample, size, c_i):
        x_i = torch.randn(n_sample, *size, device=self.device)
        for i in range(self.n_T, 0, -1):
            t_is = torch.full((n_sample, 1), i / self.n_T, device=self.device)
            z = torch.randn(n_sample, *size, device=self.device) if i > 1 else 0
            eps = self.nn_model(x_i, c_i, t_is)  # expect: missing-no-grad
            x_i = self.oneover_sqrta[i] * (x_i - eps * self.mab_over_sqrtmab[i]) + self.sqrt_beta_t[i] * z
        return x_i
