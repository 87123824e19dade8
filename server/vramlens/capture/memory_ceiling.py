"""A ceiling on the memory one untrusted load may take, so that a pickle made to grow without end
(a 9-byte one asks for a memo table of 16 GiB) ends in MemoryError instead of taking the machine.

On Linux the process's address-space limit (RLIMIT_AS) is lowered to what it uses now plus the
allowance, for the duration of the load only, then put back. Elsewhere, or when a lower limit is
already set, nothing changes.
"""

from __future__ import annotations

import contextlib
import os
import sys

# A PyTorch snapshot takes 7 to 9 times its pickle's size once loaded (measured on real and synthetic
# 1,000,000-entry snapshots: benchmarks/hostile_inputs.py --memory); the slack covers the allocator's
# own arenas. Together they keep a load within twice what a real snapshot of the same size takes.
GROWTH_PER_BYTE = 12
SLACK = 2 << 20


def allowance_for(pickle_size: int) -> int:
    """The memory a load of ``pickle_size`` bytes may add."""
    return GROWTH_PER_BYTE * pickle_size + SLACK


def _address_space_in_use() -> int | None:
    try:
        with open("/proc/self/statm", "rb") as statm:
            pages = int(statm.read().split()[0])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def memory_ceiling(allowance: int):
    """Within the block, allocations beyond ``allowance`` more bytes raise MemoryError (Linux)."""
    try:
        import resource
    except ImportError:  # not on this platform
        yield
        return
    in_use = _address_space_in_use() if sys.platform.startswith("linux") else None
    if in_use is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    ceiling = in_use + allowance
    unlimited = resource.RLIM_INFINITY
    if (soft != unlimited and soft <= ceiling) or (hard != unlimited and hard < ceiling):
        yield  # a tighter limit is already in force
        return
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
