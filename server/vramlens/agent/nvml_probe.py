"""NVML from inside the user's process, when pynvml is importable there.

This is the view at the exact OOM moment; the server side samples by PID as well, so
nothing here is required. Every failure leaves the fields unknown (None), never 0.
"""

from __future__ import annotations

import os
import time


class NvmlProbe:
    def __init__(self):
        self._nvml = None
        self._handle = None
        self.error = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
        except Exception as error:  # not installed, no driver, no permission
            self.error = f"{type(error).__name__}: {error}"

    def driver_version(self) -> str | None:
        if self._nvml is None:
            return None
        try:
            version = self._nvml.nvmlSystemGetDriverVersion()
            return version.decode() if isinstance(version, bytes) else str(version)
        except Exception:
            return None

    def bind(self, uuid: str | None, cuda_index: int) -> None:
        """Find the NVML handle of the device torch uses (UUID first: indices can differ)."""
        if self._nvml is None:
            return
        try:
            if uuid:
                self._handle = self._nvml.nvmlDeviceGetHandleByUUID(uuid)
                return
        except Exception:
            pass
        if "CUDA_VISIBLE_DEVICES" not in os.environ:
            try:
                self._handle = self._nvml.nvmlDeviceGetHandleByIndex(cuda_index)
            except Exception:
                self._handle = None

    def sample(self, phase: str, elapsed_s: float) -> dict | None:
        if self._handle is None:
            return None
        nvml, handle = self._nvml, self._handle
        sample = {"t": round(elapsed_s, 3), "epoch": time.time(), "phase": phase, "source": "agent"}
        try:
            info = nvml.nvmlDeviceGetMemoryInfo(handle)
            sample["device_total"], sample["device_used"] = int(info.total), int(info.used)
        except Exception:
            return None
        processes = _processes(nvml, handle)
        sample["processes"] = processes
        own = [p["used"] for p in processes if p["pid"] == os.getpid() and p["used"] is not None]
        sample["process_used"] = own[0] if own else None
        others = [p["used"] for p in processes if p["pid"] != os.getpid()]
        # Only meaningful once we know which entry is ours (containers may show host PIDs).
        sample["other_processes_used"] = (
            sum(u for u in others if u is not None) if own and None not in others else None
        )
        return sample


def _processes(nvml, handle) -> list:
    try:
        running = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:
        return []
    listed = []
    for process in running:
        used = getattr(process, "usedGpuMemory", None)
        listed.append({"pid": int(process.pid), "used": int(used) if isinstance(used, int) and used >= 0 else None})
    return listed
