"""A torchvision ResNet-50 training step near a memory cap: cuDNN probes workspace sizes (each failed
probe an OOM it catches), then the backward pass runs out. `--measure` prints the allocated figures
after the forward pass and at the peak, from which a cap between them is chosen."""
import argparse

import torch
import torchvision

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=96)
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--measure", action="store_true")
args = parser.parse_args()
torch.manual_seed(0)
model = torchvision.models.resnet50(num_classes=100).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
images = torch.randn(args.batch_size, 3, 224, 224, device="cuda")
labels = torch.randint(0, 100, (args.batch_size,), device="cuda")
after_forward = 0
for step in range(args.steps):
    loss = torch.nn.functional.cross_entropy(model(images), labels)
    after_forward = max(after_forward, torch.cuda.memory_allocated())
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    print("step", step, "done")
if args.measure:
    print("after_forward", after_forward, "peak", torch.cuda.max_memory_allocated())
