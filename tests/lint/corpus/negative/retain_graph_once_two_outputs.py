# source: https://stackoverflow.com/questions/46774641/what-does-the-parameter-retain-graph-mean-in-the-variables-backward-method/47174709
# Two outputs share a graph: the first backward keeps it with retain_graph=True so the second can run (no loop).
import torch

a = torch.rand(1, 4, requires_grad=True)
b = a ** 2
c = b * 2
d = c.mean()
e = c.sum()
d.backward(retain_graph=True)
e.backward()
