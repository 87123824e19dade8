"""A training loop that keeps every step's gradients for a gradient-noise study — and completes.

After each backward the loop appends the list of the parameters' gradient tensors to `grad_log`;
`zero_grad(set_to_none=True)` then gives every parameter a fresh gradient next step, so the log keeps
one full set of gradients per step. The run is short enough to finish, at about 70 % of its cap:
a longer run would not. --fixed 1 logs each gradient's norm as a float.
"""

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--fixed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    width, depth = 4096, 8
    if args.dry_run:
        args.batch_size, args.steps, width, depth = 2, 3, 32, 2
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.GELU()) for _ in range(depth)],
                          nn.Linear(width, 10)).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    grad_log = []
    for step in range(args.steps):
        x = torch.randn(args.batch_size, width, device=args.device)
        y = torch.randint(0, 10, (args.batch_size,), device=args.device)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        grads = [p.grad for p in model.parameters()]
        if args.fixed:
            grads = [g.norm().item() for g in grads]
        grad_log.append(grads)
        optimizer.zero_grad(set_to_none=True)
        print(f"[progress] step {step + 1} done", flush=True)
    print(f"logged {len(grad_log)} steps", flush=True)


if __name__ == "__main__":
    main()
