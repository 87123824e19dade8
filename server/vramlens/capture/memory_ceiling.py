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


LEAST_GROWTH_PER_BYTE = 7  # the least a real snapshot grows once loaded (same measurement)


def _available_memory() -> int | None:
    """What this process may still take: the machine's available memory, or less under an address-space limit."""
    found = []
    try:
        with open("/proc/meminfo", "rb") as meminfo:
            for line in meminfo:
                if line.startswith(b"MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        in_use = _address_space_in_use()
        if soft != resource.RLIM_INFINITY and in_use is not None:
            found.append(max(soft - in_use, 0))
    except (ImportError, OSError, ValueError):
        pass
    return min(found) if found else None


def unaffordable(pickle_size: int) -> str | None:
    """Why a snapshot of ``pickle_size`` bytes cannot be loaded here, said before a byte is read; None
    when it may fit. Judged by the least a real snapshot grows: one that could fit is never refused."""
    available = _available_memory()
    needed = LEAST_GROWTH_PER_BYTE * pickle_size
    if available is None or needed <= available:
        return None
    return (f"loading it takes at least {needed / 2**30:.1f} GiB of memory (a snapshot grows {LEAST_GROWTH_PER_BYTE}× "
            f"or more once loaded), and only {available / 2**30:.1f} GiB is available")


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
