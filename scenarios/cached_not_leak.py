"""Batches that grow in size: each needs a bigger block than the cache holds, so reserved grows.

Recorded with: vramlens run scenarios/cached_not_leak.py
The run completes. At its end little is allocated but several GiB stay reserved: that is the
caching allocator keeping freed blocks for reuse, not a leak.
Expected cause: cached_not_leak.
"""

import torch

MiB = 1024 * 1024


def process(batch_rows: int) -> float:
    batch = torch.randn(batch_rows, 1024, device="cuda")  # vramlens: culprit
    return batch.sum().item()


if __name__ == "__main__":
    total = 0.0
    for step in range(1, 9):
        total += process(batch_rows=step * 65536)
    print(f"done: {total:.1f}; allocated {torch.cuda.memory_allocated() / MiB:.0f} MiB, "
          f"reserved {torch.cuda.memory_reserved() / MiB:.0f} MiB")
