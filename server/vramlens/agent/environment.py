"""Facts about the interpreter, torch, the GPU and the allocator settings in force."""

from __future__ import annotations

import os
import platform
import sys

# Environment variables that change how the caching allocator behaves.
ALLOCATOR_ENV_VARS = (
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING",
)


def python_facts() -> dict:
    return {"executable": sys.executable, "version": platform.python_version()}


def allocator_env() -> dict:
    return {name: os.environ[name] for name in ALLOCATOR_ENV_VARS if name in os.environ}


def gpu_facts(torch, device: int, driver: str | None) -> dict:
    props = torch.cuda.get_device_properties(device)
    uuid = getattr(props, "uuid", None)
    facts = {
        "gpu_name": props.name,
        "device_index": device,
        "gpu_uuid": _uuid_text(uuid),
        "total_memory": int(props.total_memory),
        "compute_capability": f"{props.major}.{props.minor}",
        "multiprocessors": getattr(props, "multi_processor_count", None),
        "driver": driver,
        "torch": torch.__version__,
        "cuda": getattr(torch.version, "cuda", None),
        "cudnn": _cudnn_version(torch),
        "allocator_backend": _allocator_backend(torch),
        "alloc_env": allocator_env(),
    }
    return facts


def _uuid_text(uuid) -> str | None:
    if uuid is None:
        return None
    text = str(uuid)
    return text if text.startswith("GPU-") else "GPU-" + text


def _cudnn_version(torch):
    try:
        return torch.backends.cudnn.version()
    except Exception:  # cudnn missing or broken: a fact we simply don't know
        return None


def _allocator_backend(torch) -> str | None:
    get_backend = getattr(torch.cuda, "get_allocator_backend", None)
    try:
        return get_backend() if get_backend else "native"
    except Exception:
        return None
