"""torch.cuda.graphs: a training step captured once and replayed (static inputs)."""
import time

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 1024)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
static_x, static_y = torch.randn(256, 1024, device="cuda"), torch.randn(256, 1024, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):  # warm up on a side stream, as the docs ask
    for _ in range(3):
        optimizer.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(static_x), static_y).backward()
        optimizer.step()
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
optimizer.zero_grad(set_to_none=True)
with torch.cuda.graph(graph):
    static_loss = nn.functional.mse_loss(model(static_x), static_y)
    static_loss.backward()
    optimizer.step()
for step in range(30):
    torch.cuda.synchronize()
    began = time.perf_counter()
    static_x.copy_(torch.randn(256, 1024, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    print(f"step_ms {1000 * (time.perf_counter() - began):.3f}")
print("replays", 30, "loss finite", bool(torch.isfinite(static_loss)))
