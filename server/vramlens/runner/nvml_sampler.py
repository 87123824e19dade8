"""NVML samples by the script's PID, taken from the vramlens process with our pinned nvidia-ml-py.

Samples are taken periodically and, on the agent's request, at the moments that matter
(the OOM, the exit). No NVML, no driver, or a container that shows host PIDs: every field
that cannot be known is None, never a guess.
"""

from __future__ import annotations

import os
import select
import threading
import time

from vramlens.agent.runner_link import WRITING

MAX_SAMPLES = 1000  # a long run keeps an even spread over its whole length, not an ever-growing list

class NvmlSampler:
    def __init__(self, interval_s: float = 0.5):
        self.interval_s = interval_s
        self.samples: list[dict] = []
        self.error: str | None = None
        self._nvml = None
        self._handles: list = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.writing = threading.Event()  # set when the agent begins writing its final capture
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except Exception as error:  # no library, no driver, no GPU: unknown, not wrong
            self.error = f"{type(error).__name__}: {error}"

    @property
    def available(self) -> bool:
        return self._nvml is not None and bool(self._handles)

    def start(self, pid: int, events_fd: int | None, ack_fd: int | None, started: float) -> None:
        self._pid, self._started = pid, started
        self._thread = threading.Thread(
            target=self._loop, args=(events_fd, ack_fd), name="vramlens-nvml", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass

    def sample(self, phase: str) -> None:
        if not self.available:
            return
        elapsed = round(time.time() - self._started, 3)
        devices = []
        for index, handle in enumerate(self._handles):
            device = self._device_sample(index, handle)
            if device is not None:
                devices.append(device)
        self.samples.append({"t": elapsed, "epoch": time.time(), "phase": phase, "source": "server", "devices": devices})
        if len(self.samples) > MAX_SAMPLES:
            self._thin()

    def _thin(self) -> None:
        """Halve the periodic samples (and their rate) on long runs; keep every event sample."""
        periodic = [i for i, sample in enumerate(self.samples) if sample["phase"] == "periodic"]
        dropped = set(periodic[1::2])
        self.samples = [sample for i, sample in enumerate(self.samples) if i not in dropped]
        self.interval_s *= 2

    def _device_sample(self, index: int, handle) -> dict | None:
        nvml = self._nvml
        try:
            info = nvml.nvmlDeviceGetMemoryInfo(handle)
        except Exception:
            return None
        try:
            uuid = nvml.nvmlDeviceGetUUID(handle)
            uuid = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
        except Exception:
            uuid = None
        try:
            running = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except Exception:
            running = None
        processes = None
        if running is not None:
            processes = []
            for process in running:
                used = getattr(process, "usedGpuMemory", None)
                processes.append({"pid": int(process.pid), "used": int(used) if isinstance(used, int) and used >= 0 else None})
        return {"index": index, "uuid": uuid, "device_total": int(info.total), "device_used": int(info.used), "processes": processes}

    def _loop(self, events_fd: int | None, ack_fd: int | None) -> None:
        self.sample("start")
        watched = [events_fd] if events_fd is not None else []
        buffered = b""
        while not self._stop.is_set():
            ready = select.select(watched, [], [], self.interval_s)[0] if watched else self._sleep()
            if not ready:
                self.sample("periodic")
                continue
            chunk = os.read(events_fd, 256)
            if not chunk:  # the agent closed its end: it has exited
                watched = []
                continue
            buffered += chunk
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                phase = line.decode(errors="replace").strip() or "event"
                if phase == WRITING:  # not a moment to sample, nor to answer
                    self.writing.set()
                    continue
                self.sample(phase)
                try:
                    os.write(ack_fd, b"k")
                except OSError:
                    pass

    def _sleep(self) -> list:
        self._stop.wait(self.interval_s)
        return []


def samples_for_device(samples: list[dict], pid: int, uuid: str | None, index: int | None) -> list[dict]:
    """Flatten per-device samples onto the script's device, with its own and others' usage."""
    flat = []
    chosen = _choose_device(samples, pid, uuid, index)
    for sample in samples:
        device = next((d for d in sample["devices"] if d["index"] == chosen), None)
        if device is None:
            continue
        processes = device["processes"]
        own = others = None
        if processes is not None:
            mine = [p for p in processes if p["pid"] == pid]
            if mine:
                own = mine[0]["used"]
                rest = [p["used"] for p in processes if p["pid"] != pid]
                others = sum(rest) if None not in rest else None
        flat.append(
            {
                "t": sample["t"],
                "epoch": sample["epoch"],
                "phase": sample["phase"],
                "source": sample["source"],
                "device_total": device["device_total"],
                "device_used": device["device_used"],
                "process_used": own,
                "other_processes_used": others,
                "processes": processes,
            }
        )
    return flat


def _choose_device(samples: list[dict], pid: int, uuid: str | None, index: int | None) -> int | None:
    for sample in samples:
        for device in sample["devices"]:
            if uuid and device["uuid"] == uuid:
                return device["index"]
    for sample in samples:  # the device where NVML lists our process
        for device in sample["devices"]:
            if any(p["pid"] == pid for p in device["processes"] or []):
                return device["index"]
    if index is not None and "CUDA_VISIBLE_DEVICES" not in os.environ:
        return index
    return 0 if samples and len(samples[0]["devices"]) == 1 else None
