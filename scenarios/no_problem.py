"""A small, healthy training loop: memory rises to a plateau and stays there.

Recorded with: vramlens run scenarios/no_problem.py
Expected cause: no_problem.
"""

import torch
from torch import nn

model = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 10)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(30):
    x = torch.randn(256, 512, device="cuda")
    target = torch.randint(0, 10, (256,), device="cuda")
    loss = nn.functional.cross_entropy(model(x), target)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
print(f"final loss {loss.item():.3f}")
