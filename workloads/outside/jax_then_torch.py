"""JAX computes the input features, then a PyTorch model trains on them in the same process.

JAX's GPU allocator preallocates 75 % of the device the first time JAX touches it, however small
the arrays, and keeps it for the life of the process. PyTorch then gets only what is left: its
training step runs out of memory although the step alone would fit the card easily.
--jax-preallocate false sets XLA_PYTHON_CLIENT_PREALLOCATE=false before JAX starts, as JAX's
docs advise, and the same step completes.
"""

import argparse
import os


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=65536)
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--jax-preallocate", choices=("true", "false"), default="true")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.width, args.steps = min(args.batch_size, 4), 16, min(args.steps, 2)
    if args.jax_preallocate == "false":
        os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # read when JAX's backend starts

    import jax
    import jax.numpy as jnp
    import numpy as np
    import torch
    from torch import nn

    # Feature statistics computed with JAX: the first use of the device starts its allocator.
    key = jax.random.key(0)
    sample = jax.random.normal(key, (1024, args.width))
    mean, std = jnp.mean(sample, axis=0), jnp.std(sample, axis=0) + 1e-6
    mean, std = torch.from_numpy(np.asarray(mean)), torch.from_numpy(np.asarray(std))
    print(f"[progress] features ready on {jax.devices()[0].platform}", flush=True)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(args.width, args.width), nn.GELU(), nn.Linear(args.width, 16)).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    mean, std = mean.to(args.device), std.to(args.device)
    for step in range(args.steps):
        x = (torch.randn(args.batch_size, args.width, device=args.device) - mean) / std
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"[progress] step {step + 1} done, loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
