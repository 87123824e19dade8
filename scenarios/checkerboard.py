"""Small buffers freed every other one: a checkerboard no allocator setting can mend.

Recorded with: vramlens experiment --memory-limit 1280MiB --variant expandable_segments:True scenarios/checkerboard.py
2048 buffers of 512 KiB fill 1 GiB of 2 MiB small-pool segments; every other one is released,
so each segment (and each page of an expandable segment) keeps live buffers and none can be
given back. The next 512 MiB request needs new memory above the cap although 512 MiB sit free
in the cache: packed, 512 MiB live + 512 MiB would fit under 1280 MiB.
Expected: OOM with and without expandable_segments:True (fragmentation, not cured by the setting).
"""

import torch

KiB = 1024
MiB = 1024 * KiB


def fill(count: int, size: int) -> list:
    return [torch.empty(size, dtype=torch.uint8, device="cuda") for _ in range(count)]  # vramlens: culprit


if __name__ == "__main__":
    buffers = fill(2048, 512 * KiB)
    survivors = buffers[1::2]  # every other buffer stays in use
    del buffers
    batch = torch.empty(512 * MiB, dtype=torch.uint8, device="cuda")
    print(len(survivors), batch.numel())
