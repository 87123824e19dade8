"""Test double of torch (see ../README.md): a pretend CUDA device, allocations by size only."""

import types

from . import _C, backends, cuda  # noqa: F401

__version__ = "0.0+double"
version = types.SimpleNamespace(cuda="12.0")


def empty(size, dtype=None, device=None):
    """A 'tensor' of `size` bytes on the pretend device; freed when dropped."""
    return cuda.allocate(int(size))
