"""channels_last with cudnn.benchmark: a torchvision ResNet-18 training step (random weights)."""
import time

import torch
import torchvision

torch.backends.cudnn.benchmark = True
torch.manual_seed(0)
model = torchvision.models.resnet18(num_classes=10).cuda().to(memory_format=torch.channels_last)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(64, 3, 128, 128, device="cuda").to(memory_format=torch.channels_last)
y = torch.randint(0, 10, (64,), device="cuda")
for step in range(20):
    torch.cuda.synchronize()
    began = time.perf_counter()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    if step >= 2:  # the first steps benchmark cuDNN's algorithms
        print(f"step_ms {1000 * (time.perf_counter() - began):.3f}")
print("steps", 20, "loss finite", bool(torch.isfinite(loss)))
