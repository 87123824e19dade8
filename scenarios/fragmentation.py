"""A cache of per-request buffers that leaves the reserved memory full of holes.

Recorded with: vramlens run --memory-limit 1600MiB scenarios/fragmentation.py
A large warm-up buffer leaves one 1.5 GiB segment in the cache; request buffers are carved
out of it, every other one is released, and the next, larger request finds 768 MiB free in
the cache but no single hole large enough.
Expected cause: fragmentation.
"""

import torch

MiB = 1024 * 1024


def warm_up() -> None:
    workspace = torch.empty(1536 * MiB, dtype=torch.uint8, device="cuda")
    workspace.zero_()
    del workspace  # stays reserved in the cache, as one segment


def serve(requests: int):
    cache = {}
    for request in range(requests):
        cache[request] = torch.empty(24 * MiB, dtype=torch.uint8, device="cuda")  # vramlens: culprit
    for request in range(0, requests, 2):
        del cache[request]  # finished requests release their buffers: holes of 24 MiB
    return cache


if __name__ == "__main__":
    warm_up()
    kept = serve(64)
    merged = torch.empty(96 * MiB, dtype=torch.uint8, device="cuda")
    print(len(kept), merged.numel())
