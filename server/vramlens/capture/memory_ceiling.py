"""A ceiling on the memory one untrusted load may take, so that a pickle made to grow without end
(a 9-byte one asks for a memo table of 16 GiB) ends in MemoryError instead of taking the machine.

On Linux the process's address-space limit (RLIMIT_AS) is lowered to what it uses now plus the
allowance, for the duration of the load only, then put back. Elsewhere, or when a lower limit is
already set, nothing changes.

A snapshot the user trusts may be given more: ``vramlens analyze --load-memory SIZE`` (or the
environment variable VRAMLENS_LOAD_MEMORY=SIZE, for every command and the editor), SIZE such as
2GiB, or ``unlimited``.
"""

from __future__ import annotations

import contextlib
import os
import sys

from vramlens.units import parse_size

# Real snapshots take 4.4 to 7.7 times their pickle's size once loaded (measured on snapshots recorded by
# `vramlens run` on a GPU: 150,000 and 1,000,000 entries, python and all stacks, stacks at frees or not,
# Python stacks 60 calls deep; the real-world fixtures: BENCHMARKS.md "Loading large real captures"), and
# one 150k-entry snapshot took 13; the slack covers the allocator's own arenas. The ceiling is twice the most.
WORST_REAL_GROWTH = 13  # the most a real snapshot took, per byte of its pickle
GROWTH_PER_BYTE = 2 * WORST_REAL_GROWTH
SLACK = 8 << 20
ENV_VAR = "VRAMLENS_LOAD_MEMORY"
UNLIMITED = "unlimited"

_chosen: str | None = None  # what --load-memory said, ahead of the environment


def choose(text: str | None) -> None:
    """The allowance the user gave (a size, or "unlimited"), for every load from now on; ValueError if unreadable."""
    global _chosen
    if text is not None:
        _parse(text)
    _chosen = text


def _parse(text: str) -> int | None:
    if text.strip().lower() == UNLIMITED:
        return None
    return parse_size(text)


def chosen_allowance() -> tuple[bool, int | None]:
    """(whether the user chose the allowance, the bytes chosen or None for no ceiling)."""
    given = _chosen if _chosen is not None else os.environ.get(ENV_VAR)
    if given:
        try:
            return True, _parse(given)
        except ValueError:
            pass  # an unreadable variable leaves the default in force
    return False, None


def allowance_for(pickle_size: int) -> int | None:
    """The memory a load of ``pickle_size`` bytes may add (None: no ceiling, as the user asked)."""
    chosen, allowance = chosen_allowance()
    return allowance if chosen else GROWTH_PER_BYTE * pickle_size + SLACK


def raise_hint(allowance: int) -> str:
    """How to allow a trusted snapshot more, for the refusal sentence."""
    suggested = max(2 * allowance, 1 << 30)
    size = f"{-(-suggested // (1 << 30))}GiB"
    return f"`vramlens analyze --load-memory {size}` (or {ENV_VAR}={size})"


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
    """Within the block, allocations beyond ``allowance`` more bytes raise MemoryError (Linux); None: no ceiling."""
    if allowance is None:
        yield
        return
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
