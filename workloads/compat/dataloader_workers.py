"""DataLoader with num_workers=2 and pin_memory=True feeding a conv net."""
import time

import torch
from torch import nn


class Images(torch.utils.data.Dataset):
    def __len__(self):
        return 1024

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(index)
        return torch.randn(3, 64, 64, generator=g), index % 10


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(32, 10)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(Images(), batch_size=64, num_workers=2, pin_memory=True)
    seen = 0
    for x, y in loader:
        torch.cuda.synchronize()
        began = time.perf_counter()
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        seen += len(y)
        torch.cuda.synchronize()
        print(f"step_ms {1000 * (time.perf_counter() - began):.3f}")
    print("samples", seen, "loss finite", bool(torch.isfinite(loss)))
