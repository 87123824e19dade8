"""CuPy and JAX in the same process as torch, each with its own allocator."""
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import time

import cupy
import jax
import jax.numpy as jnp
import torch

a = torch.ones(4096, 4096, device="cuda")
for step in range(10):
    torch.cuda.synchronize()
    began = time.perf_counter()
    b = cupy.asarray(a) * 2  # shares torch's memory (CUDA array interface), result in CuPy's pool
    c = jnp.ones((2048, 2048)) @ jnp.ones((2048, 2048))
    total = float(torch.as_tensor(b, device="cuda").sum()) + float(c[0, 0])
    cupy.cuda.Device().synchronize()
    torch.cuda.synchronize()
    print(f"step_ms {1000 * (time.perf_counter() - began):.3f}")
    print("step", step, "total", total)
print("jax devices", [d.platform for d in jax.devices()])
