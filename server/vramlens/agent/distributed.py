"""Which rank of a torchrun launch this process is, read from the variables torchrun sets."""

from __future__ import annotations

import os
import socket

_INT_VARS = {"rank": "RANK", "local_rank": "LOCAL_RANK", "world_size": "WORLD_SIZE",
             "local_world_size": "LOCAL_WORLD_SIZE", "node_rank": "GROUP_RANK", "restart_count": "TORCHELASTIC_RESTART_COUNT"}


def _int(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def rank_facts() -> dict | None:
    """The rank's place in the job, or None outside a distributed launch."""
    if _int("RANK") is None or _int("WORLD_SIZE") is None:
        return None
    facts = {key: _int(name) for key, name in _INT_VARS.items()}
    facts.update(
        hostname=socket.gethostname(),
        master_addr=os.environ.get("MASTER_ADDR"),
        master_port=_int("MASTER_PORT"),
        job_id=os.environ.get("TORCHELASTIC_RUN_ID"),
        backend=None,
        device_index=None,
    )
    return facts


def rank_folder_name() -> str:
    """``rank-<global rank>``: the same name on every node, so the folders of one job never collide."""
    rank = _int("RANK")
    return f"rank-{rank}" if rank is not None else "rank-unknown"


def likely_device(torch) -> int:
    """The device a rank will use: the current one once the script chose it, else LOCAL_RANK (the
    convention of torchrun scripts), as recording starts before ``torch.cuda.set_device`` takes effect."""
    local_rank = _int("LOCAL_RANK")
    current = torch.cuda.current_device()
    count = torch.cuda.device_count()
    if current == 0 and local_rank is not None and 0 <= local_rank < count:
        return local_rank
    return current


def device_in_use(torch, fallback: int) -> int:
    """At the end: the device holding the most reserved memory (a rank may address ``cuda:N`` without
    ever calling set_device), else ``fallback``."""
    try:
        reserved = [torch.cuda.memory_reserved(index) for index in range(torch.cuda.device_count())]
    except Exception:
        return fallback
    if not reserved or max(reserved) <= 0 or reserved[fallback:fallback + 1] == [max(reserved)]:
        return fallback
    return reserved.index(max(reserved))


def backend(torch) -> str | None:
    """The process group's backend (nccl, gloo, …) when the script initialised one."""
    try:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return str(dist.get_backend())
    except Exception:
        pass
    return None
