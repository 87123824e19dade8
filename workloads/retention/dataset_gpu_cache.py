"""A dataset that memoises its decoded, augmented samples on the GPU to make later epochs faster.

`__getitem__` stores each new sample in `self._cache[index]` on the device. The first epoch visits
every index once, so the cache grows by a batch of full-resolution images per step, and the OOM
comes part-way through the first epoch. --fixed 1 caches the samples in host memory.
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class DecodedImages(Dataset):
    def __init__(self, count: int, size: int, device, cache_on_device: bool):
        self.count, self.size, self.device = count, size, device
        self.cache_device = device if cache_on_device else "cpu"
        self._cache = {}

    def __len__(self):
        return self.count

    def _decode(self, index: int):
        generator = torch.Generator().manual_seed(index)
        image = torch.rand(3, self.size, self.size, generator=generator).to(self.device)
        return (image - 0.5) / 0.25

    def __getitem__(self, index):
        if index not in self._cache:
            self._cache[index] = self._decode(index).to(self.cache_device)
        return self._cache[index].to(self.device), index % 10


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    size = 1024
    if args.dry_run:
        args.batch_size, args.steps, size = 2, 3, 32
    torch.manual_seed(0)
    dataset = DecodedImages(args.batch_size * args.steps, size, args.device, cache_on_device=not args.fixed)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=False, num_workers=0)
    model = nn.Sequential(nn.Conv2d(3, 16, 7, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(16, 10)).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (images, labels) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(images), labels.to(args.device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        print(f"[progress] step {step + 1} done", flush=True)
    print(f"cached {len(dataset._cache)} samples", flush=True)


if __name__ == "__main__":
    main()
