"""Test double of torch (see ../README.md): a pretend CUDA device, allocations by size only."""

import types

from . import _C, backends, cuda  # noqa: F401

__version__ = "0.0+double"
version = types.SimpleNamespace(cuda="12.0")


class Tensor:
    """A 'tensor' on the pretend device: its storage is one allocation, freed when the last tensor goes."""

    is_cuda = True
    grad_fn = None
    dtype = "uint8"

    def __init__(self, storage):
        self._storage = storage
        self.shape = (storage.size,)

    def untyped_storage(self):
        return self._storage


def empty(size, dtype=None, device=None):
    """A 'tensor' of `size` bytes on the pretend device; freed when dropped."""
    return Tensor(cuda.allocate(int(size)))
