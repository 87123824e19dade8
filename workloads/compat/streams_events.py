"""Work split over two streams, ordered with events, tensors handed across with record_stream."""
import time

import torch

torch.manual_seed(0)
copy_stream, compute_stream = torch.cuda.Stream(), torch.cuda.Stream()
weights = torch.randn(4096, 4096, device="cuda")
host = torch.randn(2048, 4096).pin_memory()
for step in range(20):
    torch.cuda.synchronize()
    began = time.perf_counter()
    ready = torch.cuda.Event()
    with torch.cuda.stream(copy_stream):
        x = host.to("cuda", non_blocking=True)
        ready.record()
    with torch.cuda.stream(compute_stream):
        compute_stream.wait_event(ready)
        x.record_stream(compute_stream)
        y = (x @ weights).relu().sum()
    done = torch.cuda.Event(enable_timing=True)
    done.record(compute_stream)
    done.synchronize()
    print(f"step_ms {1000 * (time.perf_counter() - began):.3f}")
    print("step", step, "finite", bool(torch.isfinite(y)))
