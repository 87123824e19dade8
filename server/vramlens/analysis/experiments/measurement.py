"""The figures of one run that an experiment compares, read from its capture.json alone.

Nothing here loads the snapshot: every figure is one the agent or the runner already wrote,
so measuring a run costs nothing after it ends.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

# The metrics compared between variants, in table order, with the unit their noise floor uses.
METRICS = {
    "peak_allocated": "bytes",
    "peak_reserved": "bytes",
    "driver_peak": "bytes",
    "oom_cached": "bytes",
    "duration_s": "seconds",
}


@dataclass
class RunMeasurement:
    status: str | None  # capture.json status: completed | oom | error | exit | timeout | ...
    exit_code: int | None
    oom: bool
    peak_allocated: int | None
    peak_reserved: int | None
    driver_peak: int | None  # the script's own usage per NVML, highest sample (periodic, at the OOM, at exit)
    oom_cached: int | None  # reserved − allocated at the OOM: free inside PyTorch's segments yet unusable
    oom_reserved: int | None
    duration_s: float | None
    capture: str | None = None  # the run's capture folder

    @property
    def fragmentation(self) -> float | None:
        """Share of reserved memory that was free but could not serve the request at the OOM."""
        if self.oom_cached is None or not self.oom_reserved:
            return None
        return self.oom_cached / self.oom_reserved

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "RunMeasurement":
        return cls(**{name: data.get(name) for name in cls.__dataclass_fields__})


def measure(meta: dict, capture: str | None = None) -> RunMeasurement:
    stats = meta.get("stats") or {}
    oom = meta.get("oom") if isinstance(meta.get("oom"), dict) else None
    cached = reserved = None
    if oom is not None and isinstance(oom.get("reserved"), int) and isinstance(oom.get("allocated"), int):
        # The allocator has already released every wholly free segment before it raises, so
        # what is still cached at the OOM is free space split among live blocks.
        reserved, cached = oom["reserved"], oom["reserved"] - oom["allocated"]
    return RunMeasurement(
        status=meta.get("status"),
        exit_code=meta.get("exit_code"),
        oom=oom is not None or meta.get("status") == "oom",
        peak_allocated=stats.get("peak_allocated"),
        peak_reserved=stats.get("peak_reserved"),
        driver_peak=driver_peak(meta),
        oom_cached=cached,
        oom_reserved=reserved,
        duration_s=meta.get("duration_s"),
        capture=capture,
    )


def driver_peak(meta: dict) -> int | None:
    """The highest per-process usage NVML reported for the script; None when NVML never saw it."""
    samples = list((meta.get("nvml") or {}).get("samples") or [])
    samples += [sample for sample in (meta.get("exit_nvml"), (meta.get("oom") or {}).get("nvml")) if isinstance(sample, dict)]
    used = [sample["process_used"] for sample in samples if isinstance(sample.get("process_used"), int)]
    return max(used, default=None)
