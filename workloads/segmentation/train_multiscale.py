"""Semantic segmentation training with torchvision's DeepLabV3 (ResNet-50 backbone, random weights) and
multi-scale augmentation, as torchvision's segmentation reference recipe does: each image is resized by
a random factor and a batch is padded to its largest image (the references' collate_fn), so every step
has its own input size; images and masks are made with torch.

Every step asks the caching allocator for blocks of new sizes while the weights, gradients and SGD's
momentum stay where they were put; the cache splits into pieces that sit in segments it cannot release.
--crop-size N crops every image to N x N after the resize (the references' RandomCrop), so every
step has the same shape.
"""

import argparse
import random

import torch
from torch.nn import functional as F
from torchvision.models.segmentation import deeplabv3_resnet50


class RandomScenes(torch.utils.data.Dataset):
    """Images of random size with a mask, resized by a random scale (RandomResize), optionally cropped."""

    def __init__(self, count: int, base_size: int, crop_size: int, classes: int, seed: int):
        self.count, self.base, self.crop, self.classes, self.seed = count, base_size, crop_size, classes, seed

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        rng = random.Random(self.seed * 100_003 + index)
        size = rng.randint(self.base // 2, self.base * 2)
        generator = torch.Generator().manual_seed(self.seed * 100_003 + index)
        image = torch.rand(3, size, size + rng.randint(-size // 8, size // 8), generator=generator)
        mask = torch.randint(0, self.classes, image.shape[1:], generator=generator)
        if self.crop:
            pad_h, pad_w = max(0, self.crop - image.shape[1]), max(0, self.crop - image.shape[2])
            image = F.pad(image, (0, pad_w, 0, pad_h))
            mask = F.pad(mask, (0, pad_w, 0, pad_h), value=255)
            top, left = rng.randint(0, image.shape[1] - self.crop), rng.randint(0, image.shape[2] - self.crop)
            image, mask = image[:, top:top + self.crop, left:left + self.crop], mask[top:top + self.crop, left:left + self.crop]
        return image, mask


def cat_list(tensors, fill_value=0):
    """Pad a list of tensors to the largest one in each dimension and stack them (torchvision references)."""
    shape = [max(sizes) for sizes in zip(*(t.shape for t in tensors))]
    batched = tensors[0].new_full((len(tensors), *shape), fill_value)
    for tensor, slot in zip(tensors, batched):
        slot[tuple(slice(0, n) for n in tensor.shape)].copy_(tensor)
    return batched


def collate_fn(batch):
    images, targets = zip(*batch)
    return cat_list(images, 0), cat_list(targets, 255)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--base-size", type=int, default=320)
    parser.add_argument("--crop-size", type=int, default=0, help="crop every image to N x N (0: no crop)")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.steps, args.base_size = min(args.batch_size, 2), min(args.steps, 2), 32
        args.crop_size = min(args.crop_size, 32)

    torch.manual_seed(0)
    classes = 21
    model = deeplabv3_resnet50(weights=None, weights_backbone=None, num_classes=classes, aux_loss=True).to(args.device)
    params = [{"params": [p for p in model.backbone.parameters() if p.requires_grad]},
              {"params": [p for p in model.classifier.parameters() if p.requires_grad]},
              {"params": [p for p in model.aux_classifier.parameters() if p.requires_grad], "lr": 0.1}]
    optimizer = torch.optim.SGD(params, lr=0.02, momentum=0.9, weight_decay=1e-4)
    data = RandomScenes(args.steps * args.batch_size, args.base_size, args.crop_size, classes, seed=0)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size, collate_fn=collate_fn)
    model.train()
    for step, (images, targets) in enumerate(loader):
        images, targets = images.to(args.device), targets.to(args.device)
        output = model(images)
        loss = F.cross_entropy(output["out"], targets, ignore_index=255) + \
            0.5 * F.cross_entropy(output["aux"], targets, ignore_index=255)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"[progress] step {step + 1} done, input {tuple(images.shape[2:])}, loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
