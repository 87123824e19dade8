"""The pretend device: 8 GiB, one allocation per 'tensor', a trace like torch's."""

import os
import types

from . import memory  # noqa: F401

TOTAL = 8 * 2**30
OBSERVERS = []
_queued = []
_state = {"initialised": False, "fraction": 1.0, "allocated": 0, "peak": 0, "next_address": 2**32, "ooms": 0}


class OutOfMemoryError(RuntimeError):
    pass


def is_available():
    return os.environ.get("DOUBLE_NO_CUDA") != "1"


def is_initialized():
    return _state["initialised"]


def _lazy_call(callable, **kwargs):
    if _state["initialised"]:
        callable()
    else:
        _queued.append(callable)


def _lazy_init():
    if not _state["initialised"]:
        _state["initialised"] = True
        _state["alloc_conf"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")  # read once, at initialisation
        for call in _queued:
            call()


init = _lazy_init


def current_device():
    _lazy_init()
    return 0


def get_device_properties(device):
    _lazy_init()
    return types.SimpleNamespace(name="Test Double GPU", total_memory=TOTAL, major=9, minor=0,
                                 multi_processor_count=1, uuid="00000000-0000-0000-0000-000000000000")


def get_allocator_backend():
    return "native"


def set_per_process_memory_fraction(fraction, device=None):
    _state["fraction"] = fraction


def memory_allocated(device=None):
    return _state["allocated"]


def memory_reserved(device=None):
    return _state["allocated"]


def memory_stats(device=None):
    return {"allocated_bytes.all.current": _state["allocated"], "reserved_bytes.all.current": _state["allocated"],
            "allocated_bytes.all.peak": _state["peak"], "reserved_bytes.all.peak": _state["peak"],
            "num_alloc_retries": 0, "num_ooms": _state["ooms"]}


class _Block:
    def __init__(self, size, address):
        self.size, self.address = size, address

    def __del__(self):
        _state["allocated"] -= self.size
        memory.record("free_completed", self.address, self.size)


def allocate(size):
    _lazy_init()
    limit = int(_state["fraction"] * TOTAL)
    if _state["allocated"] + size > limit:
        _state["ooms"] += 1
        memory.record("oom", limit - _state["allocated"], size)
        for observer in OBSERVERS:
            observer(0, size, limit, TOTAL - _state["allocated"])
        raise OutOfMemoryError(f"CUDA out of memory. Tried to allocate {size} bytes.")
    address = _state["next_address"]
    _state["next_address"] += size
    _state["allocated"] += size
    _state["peak"] = max(_state["peak"], _state["allocated"])
    memory.record("alloc", address, size)
    return _Block(size, address)



def device_count():
    return 1
