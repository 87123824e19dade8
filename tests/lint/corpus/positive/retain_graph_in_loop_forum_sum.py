# source: https://discuss.pytorch.org/t/how-computation-graph-in-pytorch-is-created-and-freed/3515/4
# Asks whether backward(retain_graph=True) in a 100-iteration loop keeps all 100 graphs alive.
import torch

for i in range(100):
    a = torch.randn(2, 3, device="cuda", requires_grad=True)
    y = torch.sum(a)
    y.backward(retain_graph=True)  # expect: retain-graph-in-loop
