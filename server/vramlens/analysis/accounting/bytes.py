"""Every byte that can be accounted for at the moment that matters (the OOM, else the peak):
allocated, cached (reserved - allocated) with its largest free block, reserved, what the driver
saw, and what lies outside PyTorch (this process's context and libraries, other processes)."""

from __future__ import annotations

from datetime import datetime

from vramlens.analysis.accounting.free_blocks import SplitSegments
from vramlens.analysis.model import Accounting


def _epoch_seconds(iso: str | None) -> float | None:
    if not iso:
        return None
    try:
        return datetime.fromisoformat(str(iso).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# NVML is sampled every half second or so: a sample further than this from the moment
# describes another state of the run, and is not shown as "the same moment".
NEAR_ENOUGH_S = 1.0


def nvml_sample(meta: dict, moment: str, time_us: int | None, reserved: int | None = None) -> dict | None:
    """The NVML sample for the moment: the OOM's own sample, else the nearest one in time that
    is consistent with it (the driver cannot have seen less than PyTorch had reserved); else none."""
    samples = [s for s in ((meta.get("nvml") or {}).get("samples") or []) if isinstance(s, dict)]
    if moment == "oom":
        own = (meta.get("oom") or {}).get("nvml")
        if isinstance(own, dict) and own.get("device_used") is not None:
            return own
        for sample in samples:
            if sample.get("phase") == "oom":
                return sample
    measured = [s for s in samples if s.get("device_used") is not None]
    if reserved is not None:
        measured = [s for s in measured if s["device_used"] >= reserved and (s.get("process_used") or reserved) >= reserved]
    started = _epoch_seconds(meta.get("started_at"))
    if not measured or not time_us or started is None:
        return None
    at = time_us / 1e6

    def distance(sample: dict) -> float:
        epoch = sample.get("epoch")
        return abs((epoch if epoch is not None else started + (sample.get("t") or 0.0)) - at)

    nearest = min(measured, key=distance)
    return nearest if distance(nearest) <= NEAR_ENOUGH_S else None


def device_total(meta: dict, total_memory: int | None) -> int | None:
    if total_memory:
        return total_memory
    recorded = (meta.get("environment") or {}).get("total_memory")
    if recorded:
        return recorded
    for sample in (meta.get("nvml") or {}).get("samples") or []:
        if sample.get("device_total"):
            return sample["device_total"]
    return None


def allocator_limit(meta: dict, total: int | None) -> tuple[int | None, bool]:
    """The ceiling the allocator failed against (a fraction cap, or the device) and whether it is a cap."""
    oom_limit = (meta.get("oom") or {}).get("device_limit")
    cap = (meta.get("memory_limit") or {}).get("bytes")
    limit = oom_limit or cap or total
    # A cap set by the script itself (set_per_process_memory_fraction) shows only as a limit below the total.
    is_cap = limit is not None and limit < total if total else bool(cap)
    return limit, is_cap


def other_process_usage(sample: dict | None, own_pid: int | None) -> list[tuple[int, int]]:
    """(pid, bytes) of every process NVML listed besides the script, largest first."""
    rows = [(p.get("pid"), p.get("used")) for p in (sample or {}).get("processes") or [] if isinstance(p, dict)]
    return sorted(((pid, used) for pid, used in rows if pid != own_pid and used), key=lambda row: -row[1])


def account(
    *, moment: str, allocated: int, reserved: int, largest_free_block: int | None, pool: str | None,
    request: int | None, device_free: int | None, sample: dict | None, total: int | None,
    limit: int | None, limit_is_cap: bool, own_pid: int | None = None, split: SplitSegments | None = None,
) -> Accounting:
    driver_used = process_used = other = driver_total = None
    phase = None
    if sample:
        driver_used, process_used = sample.get("device_used"), sample.get("process_used")
        other, phase = sample.get("other_processes_used"), sample.get("phase")
        driver_total = sample.get("device_total") if driver_used is not None else None
        total = total or sample.get("device_total")
    if driver_used is None and device_free is not None and total and total - device_free >= reserved:
        # Only when consistent: a --total-memory below what the driver called free is a cap, not the device.
        driver_used, driver_total, phase = total - device_free, total, "oom (driver free memory)"
    non_pytorch = max(driver_used - reserved, 0) if driver_used is not None else None
    context = max(process_used - reserved, 0) if process_used is not None else None
    if other is None and context is not None and non_pytorch is not None:
        other = max(non_pytorch - context, 0)
    unattributed = None
    if non_pytorch is not None and context is not None and other is not None:
        unattributed = max(non_pytorch - context - other, 0)
    fits = None
    if request is not None and largest_free_block is not None:
        fits = largest_free_block >= request
    return Accounting(
        moment=moment, allocated=allocated, reserved=reserved, cached=max(reserved - allocated, 0),
        largest_free_block=largest_free_block, largest_free_pool=pool, free_block_fits_request=fits,
        driver_used=driver_used, process_used=process_used, non_pytorch=non_pytorch,
        context_and_libraries=context, other_processes=other,
        other_process_usage=other_process_usage(sample, own_pid) if other else [], unattributed=unattributed, device_total=total, driver_total=driver_total, limit=limit,
        limit_is_cap=limit_is_cap, request=request, device_free=device_free, nvml_phase=phase,
        split_segments=split.count if split else None, split_free=split.free if split else None,
    )
