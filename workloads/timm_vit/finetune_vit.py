"""Fine-tuning a timm Vision Transformer under torch.autocast (bf16), with Mixup and AdamW, as timm's
training recipes do; images are made with torch.

At --batch-size too large for the card the first step's activations do not fit: the OOM comes inside
the first forward/backward. --grad-checkpointing 1 (timm's model.set_grad_checkpointing()) keeps only
each block's input and recomputes the rest during backward, so the same batch fits.
"""

import argparse

import timm
import torch
from timm.data import Mixup
from timm.loss import SoftTargetCrossEntropy
from timm.optim import create_optimizer_v2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--model", default="vit_small_patch16_224")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--grad-checkpointing", type=int, default=0, help="1: model.set_grad_checkpointing()")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.model, args.image_size = "vit_tiny_patch16_224", 32
        args.batch_size, args.steps = min(args.batch_size, 4), min(args.steps, 2)

    torch.manual_seed(0)
    classes = 100
    model = timm.create_model(args.model, pretrained=False, num_classes=classes, img_size=args.image_size,
                              drop_path_rate=0.1).to(args.device)
    if args.grad_checkpointing:
        model.set_grad_checkpointing(True)
    optimizer = create_optimizer_v2(model, opt="adamw", lr=5e-4, weight_decay=0.05)
    mixup = Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=classes)
    criterion = SoftTargetCrossEntropy()
    model.train()
    for step in range(args.steps):
        images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=args.device)
        labels = torch.randint(0, classes, (args.batch_size,), device=args.device)
        images, targets = mixup(images, labels)
        with torch.autocast(device_type=args.device, dtype=torch.bfloat16):
            loss = criterion(model(images), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"[progress] step {step + 1} done, loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
