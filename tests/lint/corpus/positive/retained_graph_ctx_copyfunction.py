# source: https://github.com/pytorch/pytorch/issues/5569
# A custom Function keeps its output on ctx instead of save_for_backward; memory grows every call (expected per maintainers).
import torch


class CopyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_features, weight):
        ctx.output_features = input_features.clone()  # expect: retained-graph
        return ctx.output_features

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None


weight = torch.nn.Parameter(torch.randn(100, 100))
for _ in range(1000000):
    inp = torch.rand(100, 100, device="cuda")
    output = CopyFunction.apply(inp, weight)
