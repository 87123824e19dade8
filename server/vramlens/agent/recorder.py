"""Allocator history, the OOM observer, and the snapshot taken at the moment that matters.

Stacks are gathered for allocations only (``context="alloc"``) unless free-side stacks are asked
for: with stacks gathered at frees too, non-reentrant activation checkpointing's early stop (an internal
exception that ends the recomputation on the autograd thread) loses its error, and ``backward()`` fails
with "SystemError: … returned NULL without setting an exception" (measured with torch 2.11 and
transformers' BERT; docs/capture-format.md, "Recording settings"). The analysis reads no free-side stack.
"""

from __future__ import annotations

import time

from .oom_fate import OomFate

ALLOC_ONLY, WITH_FREES = "alloc", "all"


class OomRecord:
    """What the OOM observer saw at the latest OOM, and how many there were.

    A script may catch an OOM and retry smaller; the one that matters is the last, which
    is the one its traceback (if it died of it) shows.
    """

    def __init__(self):
        self.latest: dict | None = None
        self.snapshot: dict | None = None
        self.census: dict | None = None  # the census of the latest OOM, or None
        self.count = 0
        self.reached_python = 0  # OOMs whose error was raised in Python code (known with sys.monitoring only)
        self.seen_by_python: bool | None = None  # whether the raises are known (see agent/oom_fate.py)

    def caught_below_python(self) -> int | None:
        """OOMs that libraries caught before any Python code saw them (cuDNN's workspace probes)."""
        return self.count - self.reached_python if self.seen_by_python else None

    def facts(self) -> dict | None:
        if not self.latest:
            return None
        facts = dict(self.latest, count=self.count)
        if self.seen_by_python:
            facts["caught_below_python"] = self.caught_below_python()
        return facts


class Recorder:
    def __init__(self, torch, device: int, stacks: str, max_entries: int, on_oom_sample, on_oom_census=None,
                 free_stacks: bool = False):
        self.torch = torch
        self.device = device
        self.stacks = stacks
        self.max_entries = max_entries
        self.context = WITH_FREES if free_stacks else ALLOC_ONLY
        self.oom = OomRecord()
        self._on_oom_sample = on_oom_sample  # (phase) -> in-process NVML sample or None
        self._on_oom_census = on_oom_census  # () -> the census at this moment, or None
        self._fate: OomFate | None = None

    def start(self) -> None:
        self.start_history()
        self._fate = OomFate(self._oom_reached_python)
        # The observer may be attached only once CUDA is initialised (it segfaults otherwise).
        self.torch._C._cuda_attach_out_of_memory_observer(self._observe_oom)

    def _observe_oom(self, device, requested, device_limit, device_free) -> None:
        # Called by the allocator before the OutOfMemoryError unwinds, with its lock released:
        # the memory state here is the state of the failure, which the traceback loses.
        self.oom.count += 1
        self.oom.seen_by_python = self._fate is not None and self._fate.available
        cuda = self.torch.cuda
        record = {
            "device": int(device),
            "requested": int(requested),
            "device_limit": int(device_limit),
            "device_free": int(device_free),
            "time": time.time(),
        }
        try:
            record["allocated"] = int(cuda.memory_allocated(device))
            record["reserved"] = int(cuda.memory_reserved(device))
        except Exception:
            record["allocated"] = record["reserved"] = None
        record["nvml"] = self._on_oom_sample("oom")
        self.oom.latest = record
        self.oom.snapshot = self.oom.census = None
        if self._fate is not None and self._fate.available:
            # Deferred to the error's first raise in Python: an OOM a library catches below Python
            # (a cuDNN workspace probe) then costs neither a snapshot nor a census.
            self._fate.watch()
            return
        self._snapshot_and_census()

    def _oom_reached_python(self) -> None:
        self.oom.reached_python += 1
        self._snapshot_and_census()

    def _snapshot_and_census(self) -> None:
        self.oom.snapshot = self.snapshot_now()
        # After the snapshot, so that the walk over the objects changes nothing it shows.
        self.oom.census = self._on_oom_census() if self._on_oom_census else None

    def snapshot_now(self) -> dict | None:
        try:
            return self.torch.cuda.memory._snapshot()
        except Exception:
            return None

    def stats(self) -> dict:
        try:
            stats = self.torch.cuda.memory_stats(self.device)
        except Exception:
            return {}
        pick = {
            "allocated": "allocated_bytes.all.current",
            "reserved": "reserved_bytes.all.current",
            "peak_allocated": "allocated_bytes.all.peak",
            "peak_reserved": "reserved_bytes.all.peak",
            "num_alloc_retries": "num_alloc_retries",
            "num_ooms": "num_ooms",
            "num_device_alloc": "num_device_alloc",
            "num_device_free": "num_device_free",
        }
        return {name: stats.get(key) for name, key in pick.items()}

    def start_history(self) -> None:
        """Record again after ``stop_history`` (the OOM observer stays attached: torch cannot detach one)."""
        self.torch.cuda.memory._record_memory_history(
            enabled="all", context=self.context, stacks=self.stacks, max_entries=self.max_entries
        )

    def stop_history(self) -> None:
        try:
            self.torch.cuda.memory._record_memory_history(enabled=None)
        except Exception:  # already off, or an old torch: nothing more to stop
            pass
