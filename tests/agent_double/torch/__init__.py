"""Test double of torch (see ../README.md): a pretend CUDA device, allocations by size only."""

import types

from . import _C, backends, cuda  # noqa: F401

__version__ = "0.0+double"
version = types.SimpleNamespace(cuda="12.0")


class _Storage:
    def __init__(self, block):
        self._block = block

    def data_ptr(self):
        return self._block.address

    def nbytes(self):
        return self._block.size


class Tensor:
    """A 'tensor' of bytes on the pretend device, with the metadata the tensor census reads."""

    is_cuda = True
    dtype = "torch.uint8"
    requires_grad = False
    grad_fn = None
    grad = None
    is_leaf = True

    def __init__(self, block):
        self._block = block
        self.shape = (block.size,)

    def untyped_storage(self):
        return _Storage(self._block)

    def storage_offset(self):
        return 0

    def element_size(self):
        return 1

    def get_device(self):
        return 0


def empty(size, dtype=None, device=None):
    """A 'tensor' of `size` bytes on the pretend device; freed when dropped."""
    return Tensor(cuda.allocate(int(size)))


def is_grad_enabled():
    return True


def is_inference_mode_enabled():
    return False
