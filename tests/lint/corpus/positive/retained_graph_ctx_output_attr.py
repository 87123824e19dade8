# source: https://github.com/pytorch/pytorch/issues/25340
# Assigning the Function's output to an attribute of ctx makes a cycle, so ctx and everything on it is never freed.
import torch


class Test(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.clone()
        ctx.y = y  # expect: retained-graph
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad


x = torch.rand(8, 8, requires_grad=True)
for _ in range(1000):
    out = Test.apply(x)
