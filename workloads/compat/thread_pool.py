"""A thread pool whose threads each run GPU work on a stream of their own."""
import time
from concurrent.futures import ThreadPoolExecutor

import torch

torch.manual_seed(0)
weights = torch.randn(2048, 2048, device="cuda")


def work(seed):
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        g = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(1024, 2048, device="cuda", generator=g)
        for _ in range(10):
            x = torch.tanh(x @ weights)
        result = x.abs().sum()
    stream.synchronize()
    return bool(torch.isfinite(result))


with ThreadPoolExecutor(max_workers=4) as pool:
    for step in range(10):
        torch.cuda.synchronize()
        began = time.perf_counter()
        results = list(pool.map(work, range(step * 8, step * 8 + 8)))
        torch.cuda.synchronize()
        print(f"step_ms {1000 * (time.perf_counter() - began):.3f}")
        print("step", step, "all finite", all(results))
