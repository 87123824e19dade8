# source: https://github.com/pytorch/pytorch/issues/16744
# backward with create_graph=True inside a loop makes memory grow monotonically (reference cycle through .grad).
import torch

for i in range(500000):
    X = torch.ones(1, requires_grad=True)
    Y = X * X
    Y.backward(retain_graph=True, create_graph=True)  # expect: retain-graph-in-loop
