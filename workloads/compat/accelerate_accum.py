"""accelerate: gradient accumulation (4) and bf16 mixed precision on a small MLP."""
import time

import torch
from accelerate import Accelerator
from torch import nn

torch.manual_seed(0)
accelerator = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=4)
model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.utils.data.TensorDataset(torch.randn(2048, 1024), torch.randn(2048, 1024))
loader = torch.utils.data.DataLoader(data, batch_size=64)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
updates = 0
for epoch in range(2):
    for x, y in loader:
        torch.cuda.synchronize()
        began = time.perf_counter()
        with accelerator.accumulate(model):
            loss = nn.functional.mse_loss(model(x), y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        updates += accelerator.sync_gradients
        torch.cuda.synchronize()
        print(f"step_ms {1000 * (time.perf_counter() - began):.3f}")
print("optimizer updates", updates, "loss finite", bool(torch.isfinite(loss)))
