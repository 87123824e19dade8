"""What every recording does, whatever runs under it: a script (agent/session.py) or the cells of a
notebook kernel (agent/kernel_session.py).

The core owns the recorder (allocator history with ``context="alloc"``, the OOM observer and its
OOM fate), the in-process NVML probe, the link to the runner and the notes for the user; it starts
recording on the device the front end names, and writes the capture folder so that a failure to
read or write the allocator's state still leaves the facts. A front end says what runs (the meta
that describes it, which snapshot explains its ending, where a census comes from) and nothing of
how recording works.
"""

from __future__ import annotations

import datetime
import os
import sys
import time
from typing import NamedTuple

from . import environment, live_status, tracebacks
from .capture_writer import write_capture
from .nvml_probe import NvmlProbe
from .recorder import Recorder
from .recording_safety import free_stacks_refusal
from .runner_link import RunnerLink

NO_OOM_CENSUS = "No census was taken at the latest OOM, so the capture has none."


class MemoryCap(NamedTuple):
    """A cap on the allocator as the user asked for it: a size, or a share of the device."""

    limit_bytes: int | None
    fraction: float | None
    requested: str | None  # as the user wrote it
    named: str  # how a warning names it: "--memory-limit 24GiB", "The memory limit 24GiB"


NO_CAP = MemoryCap(None, None, None, "")


class RecordingCore:
    def __init__(self, stacks: str, max_entries: int, free_stacks: bool):
        self.stacks, self.max_entries, self.free_stacks = stacks, max_entries, free_stacks
        self.started = time.time()
        self.link = RunnerLink.from_environment()
        self.nvml = NvmlProbe()
        self.torch = None
        self.recorder: Recorder | None = None
        self.notes: list[str] = []
        self.meta: dict = {}
        self.env_at_cuda_init: dict | None = None  # the allocator's environment variables when recording began

    def base_meta(self, run_id: str, script: str | None, argv: list[str], source_root: str, census: bool,
                  environment_facts: dict, distributed: dict | None) -> dict:
        """capture.json's facts known before the first CUDA use."""
        return {
            "run_id": run_id,
            "pid": os.getpid(),
            "started_at": datetime.datetime.fromtimestamp(self.started, datetime.timezone.utc).isoformat(timespec="milliseconds"),
            "started_epoch": self.started,
            "script": script,
            "argv": argv,
            "cwd": os.getcwd(),
            "source_root": os.path.abspath(source_root),
            "python": environment.python_facts(),
            "recording": {"stacks": self.stacks, "max_entries": self.max_entries,
                          "context": "all" if self.free_stacks else "alloc", "census": census},
            "memory_limit": None,
            "environment": environment_facts,
            "nvml_agent": {"available": self.nvml.error is None, "error": self.nvml.error},
            "distributed": distributed,
        }

    def warn(self, sentence: str) -> None:
        self.notes.append(sentence)
        print(f"vramlens: {sentence}", file=sys.stderr)

    # -- starting --------------------------------------------------------------------------------
    def start_recording(self, device: int, cap: MemoryCap, on_oom_sample, on_oom_census, status_file: str | None,
                        code: str | None, code_kind: str, on_live_sample=None) -> None:
        """Record on ``device`` from now on. ``code``: the file whose activation checkpointing refuses
        free-side stacks (agent/recording_safety.py), a ``code_kind`` (script, notebook)."""
        torch = self.torch
        facts = environment.gpu_facts(torch, device, self.nvml.driver_version())
        self.env_at_cuda_init = facts["alloc_env"]
        self.meta["environment"] = facts
        self.nvml.bind(facts["gpu_uuid"], device)
        self.meta["memory_limit"] = self._apply_memory_limit(device, facts["total_memory"], cap)
        free_stacks = self.free_stacks
        refusal = free_stacks_refusal(code) if free_stacks and code else None
        if refusal:
            free_stacks = False
            self.meta["recording"]["context"] = "alloc"
            self.warn(refusal.replace("the script uses", f"the {code_kind} uses"))
        self.recorder = Recorder(torch, device, self.stacks, self.max_entries, on_oom_sample, on_oom_census,
                                 free_stacks=free_stacks)
        self.recorder.start()
        self.link.request_sample("cuda_init")
        if status_file:
            live_status.start(torch, device, status_file, on_sample=on_live_sample)

    def _apply_memory_limit(self, device: int, total: int, cap: MemoryCap) -> dict | None:
        if cap.limit_bytes is None and cap.fraction is None:
            return None
        fraction = cap.fraction if cap.fraction is not None else cap.limit_bytes / total
        if fraction > 1:
            self.warn(f"{cap.named} is more than this GPU's {total / 2**30:.2f} GiB, so no cap was applied.")
            return None
        # A rank may still switch to its own device after this: cap every device it can see.
        devices = range(self.torch.cuda.device_count()) if self.meta.get("distributed") else [device]
        for index in devices:
            self.torch.cuda.set_per_process_memory_fraction(fraction, index)
        return {"requested": cap.requested, "fraction": fraction, "bytes": int(fraction * total)}

    def sample(self, phase: str):
        """An NVML sample from inside the process, while the runner samples by our PID meanwhile."""
        self.link.request_sample(phase)
        return self.nvml.sample(phase, time.time() - self.started)

    # -- the capture -----------------------------------------------------------------------------
    def ending_meta(self, status: str, exit_code: int | None, exception: dict | None, exception_epoch: float | None,
                    notes: list[str]) -> dict:
        """The meta with how the run ended (the allocator's part comes with ``allocator_meta``)."""
        meta = dict(self.meta)
        now = time.time()
        meta.update(status=status, exit_code=exit_code, duration_s=round(now - self.started, 3), ended_epoch=now,
                    exception=exception, notes=notes)
        if meta["exception"] is not None:
            meta["exception"]["epoch"] = exception_epoch
        return meta

    def allocator_meta(self, meta: dict, snapshot, moment: str, oom_facts: dict | None, exit_nvml: bool) -> None:
        """What the allocator says at the capture's moment, added to ``meta``."""
        if isinstance(snapshot, dict) and snapshot.get("allocator_settings") is not None:
            # torch 2.3+ reports the settings actually in force, parsed: keep them with the env vars.
            meta["environment"] = dict(meta["environment"], allocator_settings=snapshot["allocator_settings"])
        meta.update(
            snapshot_moment=moment,
            oom=oom_facts,
            stats=self.recorder.stats(),
            exit_nvml=self.nvml.sample("exit", time.time() - self.started) if exit_nvml else None,
        )

    def census_at(self, meta: dict, take) -> dict | None:
        """The census of the snapshot's moment: the OOM observer's, or ``take(moment)`` now."""
        moment = meta.get("snapshot_moment")
        if moment == "oom":
            census = self.recorder.oom.census
            if census is None:
                meta.setdefault("notes", []).append(NO_OOM_CENSUS)
            return census
        return take(moment)

    def unreadable_meta(self, status: str, exit_code: int | None, error: Exception) -> dict:
        """The facts alone, when the allocator's state could not be read."""
        meta = dict(self.meta, status=status, exit_code=exit_code)
        meta["notes"] = self.notes + [f"The allocator state could not be read ({type(error).__name__}: "
                                      f"{tracebacks.safe_str(error)})."]
        return meta

    def publish(self, folder: str, meta: dict, snapshot, census: dict | None = None,
                peak_census: dict | None = None) -> str | None:
        """Write the capture; when the snapshot cannot be written, the facts alone. Returns the sentence saying
        why nothing could be written, or None."""
        try:
            write_capture(folder, meta, snapshot, census, peak_census)
        except Exception as error:
            meta["notes"] = meta.get("notes", []) + [f"The snapshot could not be written ({type(error).__name__}: "
                                                     f"{tracebacks.safe_str(error)})."]
            try:
                write_capture(folder, meta, None)
            except Exception as final:
                return f"The capture could not be written to {folder} ({tracebacks.safe_str(final)})."
        return None
