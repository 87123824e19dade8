"""A CuPy signal-processing stage, then a PyTorch model, in one process.

CuPy frees its arrays into its own memory pool, which keeps the blocks for reuse and never returns
them to the driver unless asked. After the spectra are computed and the arrays deleted, the pool
still holds most of the card, and PyTorch's training step runs out of memory. --free-cupy-pool 1
calls cupy.get_default_memory_pool().free_all_blocks() before training, as CuPy's docs describe.
On the CPU (--device cpu) NumPy stands in for CuPy.
"""

import argparse


def spectra(xp, gib: float, chunks: int, frame: int = 4096):
    """Mean power spectrum of `chunks` signals of gib/chunks GiB each, all held until the last is processed.

    Each signal is cut into frames and a quarter of them is transformed at a time (batched FFTs)."""
    samples = int(gib * 2**30 / 4 / chunks) // (4 * frame) * (4 * frame)
    generator = xp.random.default_rng(0)
    signals = [generator.standard_normal(samples, dtype=xp.float32) for _ in range(chunks)]
    total, count = 0.0, 0
    for signal in signals:
        for part in signal.reshape(4, -1, frame):
            total += float((xp.abs(xp.fft.rfft(part, axis=-1)) ** 2).mean())
            count += 1
    del signals  # freed into CuPy's pool, which keeps the blocks
    return total / count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--cupy-gib", type=float, default=100.0, help="signal data processed with CuPy")
    parser.add_argument("--batch-size", type=int, default=65536)
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--free-cupy-pool", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.cupy_gib, args.batch_size, args.width, args.steps = 0.01, 4, 16, min(args.steps, 2)

    if args.device == "cuda":
        import cupy as xp
    else:
        import numpy as xp
    import torch
    from torch import nn

    power = spectra(xp, args.cupy_gib, chunks=32)  # each signal under 2**31 samples
    print(f"mean spectral power {power:.1f}", flush=True)
    if args.device == "cuda":
        pool = xp.get_default_memory_pool()
        print(f"[progress] spectra done; CuPy pool holds {pool.total_bytes() / 2**30:.1f} GiB", flush=True)
        if args.free_cupy_pool:
            pool.free_all_blocks()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(args.width, args.width), nn.GELU(), nn.Linear(args.width, 16)).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        x = torch.randn(args.batch_size, args.width, device=args.device)
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"[progress] step {step + 1} done, loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
