"""fp16 autocast with a GradScaler."""
import time

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2048, 8192), nn.ReLU(), nn.Linear(8192, 2048)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda")
x, y = torch.randn(512, 2048, device="cuda"), torch.randn(512, 2048, device="cuda")
for step in range(30):
    torch.cuda.synchronize()
    began = time.perf_counter()
    with torch.autocast("cuda", dtype=torch.float16):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print(f"step_ms {1000 * (time.perf_counter() - began):.3f}")
print("scale", scaler.get_scale(), "loss finite", bool(torch.isfinite(loss)))
