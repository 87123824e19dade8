"""The accounting stage: every byte at the moment the analysis is about, from the free blocks the
failing request could have used to what the driver saw outside PyTorch."""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.analysis.accounting.bytes import account as account_bytes, allocator_limit, device_total, nvml_sample
from vramlens.analysis.accounting.free_blocks import free_blocks_at_end, free_blocks_at_oom, largest_free, split_segments
from vramlens.analysis.load.snapshot import pool_for_request
from vramlens.analysis.load.stage import Loaded
from vramlens.analysis.model import Accounting
from vramlens.analysis.replay.stage import Replayed


@dataclass(frozen=True)
class Accounted:
    """The accounting stage's result: the accounting and the device's total memory."""

    accounting: Accounting
    total: int | None  # the device's total memory as the capture (or --total-memory) gives it
    notes: tuple[str, ...]


def account(loaded: Loaded, replayed: Replayed) -> Accounted:
    meta, segments, moment, rep = loaded.meta, loaded.segments, replayed.moment, replayed.replay
    allocated, reserved, request = replayed.allocated, replayed.reserved, replayed.request
    free = free_blocks_at_oom(segments, rep) if moment == "oom" else free_blocks_at_end(segments)
    pool = pool_for_request(request) if request else "large"
    stream = rep.oom_stream if moment == "oom" else None
    largest = min(largest_free(free, pool, stream), max(reserved - allocated, 0)) if free or segments else None
    notes = []
    total = device_total(meta, loaded.total_memory)
    if total is None:
        notes.append("The device's total memory is unknown (a raw snapshot): pass --total-memory, e.g. 24GiB.")
    limit, limit_is_cap = allocator_limit(meta, total)
    failed = replayed.outcome == "oom"
    accounting = account_bytes(
        moment=moment, allocated=allocated, reserved=reserved, largest_free_block=largest, pool=pool,
        request=request if failed else None, device_free=replayed.device_free if failed else None,
        sample=nvml_sample(meta, moment, replayed.time_us, reserved), total=total, limit=limit, limit_is_cap=limit_is_cap,
        own_pid=(meta.get("nvml") or {}).get("pid"), split=split_segments(free, pool),
    )
    return Accounted(accounting, total, tuple(notes))
