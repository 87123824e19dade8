"""Recording inside a running Jupyter/IPython kernel: the same recorder, OOM observer and NVML
probe as `vramlens run`, around cells instead of a script.

A kernel is a long-running process that no instrumented launch can restart, so recording starts
when asked (``%vramlens start``, or the notebook runner's first silent cell) and every cell run
afterwards is logged with its source and the file name its code runs under. A capture folder in
the usual format is written at an OOM in any cell (the allocator's state at the failure, and what
the kernel itself keeps alive afterwards), on demand, when recording stops and when the kernel
shuts down.
"""

from __future__ import annotations

import atexit
import datetime
import os
import re
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field

from . import environment, kernel_holders, tracebacks
from .capture_writer import write_json_atomically
from .cells import CellLog, code_name_of
from .census import take_census
from .recording_core import NO_CAP, MemoryCap, RecordingCore

_SIZE = re.compile(r"^\s*([0-9.]+(?:[eE][0-9]+)?)\s*([KMGT]?)(i?)B?\s*$", re.IGNORECASE)
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}


def parse_limit(text: str) -> tuple[int | None, float | None]:
    """``24GiB`` / ``8e9`` -> (bytes, None); ``0.25`` (a fraction of the device) -> (None, 0.25)."""
    match = _SIZE.match(text or "")
    if not match:
        raise ValueError(f"{text!r} is neither a size (24GiB, 1600MiB, 8e9) nor a fraction of the device (0.25)")
    number, unit, binary = float(match.group(1)), match.group(2).upper(), match.group(3)
    if not unit and number <= 1:
        return None, number
    return int(number * (1024 if binary or not unit else 1000) ** _POWERS[unit]), None


@dataclass
class KernelOptions:
    capture: str | None = None  # the capture folder; None: .vramlens/captures/<notebook>-<time> in the working folder
    stacks: str = "python"
    max_entries: int = 1_000_000
    memory_limit: str | None = None
    notebook: str | None = None  # the notebook's path, when known
    source_root: str | None = None
    status_file: str | None = None  # a runner's: live figures while cells run
    run_id: str = ""
    front_end: str | None = None  # who started the recording: "vramlens" (the notebook runner) or None
    census: bool = True  # the tensor census at each capture (and at an OOM, inside the observer)
    free_stacks: bool = False  # a stack for each free too (breaks non-reentrant checkpointing: agent/recorder.py)
    notes: list[str] = field(default_factory=list)


def _notebook_of(shell, given: str | None) -> str | None:
    """The notebook file: as given, else what the front end put in the namespace (VS Code, JupyterLab)."""
    user_ns = getattr(shell, "user_ns", {}) or {}
    for candidate in (given, user_ns.get("__vsc_ipynb_file__"), user_ns.get("__session__")):
        if isinstance(candidate, str) and candidate.endswith(".ipynb"):
            return os.path.abspath(candidate) if os.path.exists(candidate) or os.path.isabs(candidate) else candidate
    return None


def default_capture_dir(notebook: str | None) -> str:
    stem = os.path.splitext(os.path.basename(notebook))[0] if notebook else "kernel"
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = os.path.join(os.getcwd(), ".vramlens", "captures", f"{stem}-{stamp}")
    candidate, number = base, 1
    while os.path.exists(candidate):
        number += 1
        candidate = f"{base}-{number}"
    return candidate


def _kernel_name() -> str:
    for module in ("ipykernel", "IPython"):
        if module in sys.modules:
            return f"{module} {getattr(sys.modules[module], '__version__', '?')}"
    return "python"


class KernelRecording(RecordingCore):
    """The kernel's front end of the recording core: started and stopped when asked, around cells."""

    def __init__(self, shell, options: KernelOptions):
        super().__init__(options.stacks, options.max_entries, options.free_stacks)
        self.shell = shell
        self.options = options
        self.notebook = _notebook_of(shell, options.notebook)
        self.capture = os.path.abspath(options.capture or default_capture_dir(self.notebook))
        self.cells = CellLog()
        self.active = False
        self.notes: list[str] = list(options.notes)
        self.writes = 0
        self.oom_kept = False  # the folder holds the capture of an OOM that nothing has run after
        self.last_error: BaseException | None = None
        self.last_error_epoch: float | None = None
        self.holders_at_oom: dict | None = None
        self.inherited: dict = {}  # facts of an earlier recording in this kernel whose recorder this one reuses
        self._exit_registered = False

    # -- starting and stopping -----------------------------------------------------------------
    def start(self) -> str | None:
        """Begin recording; one sentence saying why it cannot, or None."""
        try:
            import torch
        except ImportError as error:
            return f"PyTorch cannot be imported in this kernel ({sys.executable}: {error})."
        if not torch.cuda.is_available():
            built = getattr(torch.version, "cuda", None)
            reason = "this torch build has no CUDA support" if not built else "no CUDA device or driver is visible"
            return f"CUDA is not available in this kernel ({sys.executable}, torch {torch.__version__}: {reason})."
        self.torch = torch
        self.meta = self._base_meta()
        self.meta.update({key: value for key, value in self.inherited.items() if value})  # read when recording first began
        self.active = True
        self.cells.add_earlier(self.shell)
        events = getattr(self.shell, "events", None)
        if events is not None:
            events.register("pre_run_cell", self.before_cell)
            events.register("post_run_cell", self.after_cell)
        if not self._exit_registered:
            atexit.register(self.at_exit)
            self._exit_registered = True
            if self.options.front_end == "vramlens":  # a kernel of the runner's own: `kill -USR1` as for scripts
                self._on_demand_signal()
        if self.recorder is not None:
            self.recorder.start_history()
            self.cells.bind(torch, self.recorder.device)
            self.nvml.bind((self.meta.get("environment") or {}).get("gpu_uuid"), self.recorder.device)
        elif torch.cuda.is_initialized():
            self.notes.append("Recording began after the kernel had already used CUDA: memory allocated before then "
                              "is shown as allocated before the recorded history.")
            self._start_recording()
        else:
            # As `vramlens run` does: at the kernel's first CUDA use, so allocator settings made before then apply.
            torch.cuda._lazy_call(self._on_cuda_init)
        return None

    def adopt(self, earlier: "KernelRecording") -> None:
        """Record again with an earlier recording's recorder: its OOM observer stays attached for the
        kernel's life (torch cannot detach one), so it is pointed at this recording instead of doubled."""
        recorder = earlier.recorder
        if recorder is None:
            return
        recorder.oom = type(recorder.oom)()
        recorder._on_oom_sample = self._sample_both
        recorder._on_oom_census = self._oom_census
        self.recorder = recorder
        self.inherited = {key: earlier.meta.get(key) for key in ("environment", "memory_limit")}

    def stop(self, write: bool = True) -> str:
        """Write the capture (unless told not to) and stop recording; the kernel goes on as before."""
        running = self.cells.running()
        if running is not None:  # the cell that stops recording ends with it
            self.cells.finished(self._name_of(running), "ok")
        where = self.finish("completed") if write else self.capture
        self.active = False
        events = getattr(self.shell, "events", None)
        for name, hook in (("pre_run_cell", self.before_cell), ("post_run_cell", self.after_cell)):
            try:
                events.unregister(name, hook)
            except Exception:
                pass
        if self.recorder is not None:
            self.recorder.stop_history()
        return where

    def _on_demand_signal(self) -> None:
        def on_demand(signum, frame):
            if self.active:
                self.write("on_demand")

        try:
            signal.signal(signal.SIGUSR1, on_demand)
        except (ValueError, OSError):  # not the main thread: on demand through the magic only
            pass

    def _on_cuda_init(self) -> None:
        if not self.active:
            return  # stopped before the kernel first used CUDA
        try:
            self._start_recording()
        except Exception as error:  # recording must never be what breaks the user's first CUDA call
            self.warn(f"Recording could not start ({type(error).__name__}: {tracebacks.safe_str(error)}).")

    def _start_recording(self) -> None:
        text = self.options.memory_limit
        cap = MemoryCap(*parse_limit(text), text, f"The memory limit {text}") if text else NO_CAP
        device = self.torch.cuda.current_device()
        self.start_recording(device, cap, self._sample_both, self._oom_census, self.options.status_file,
                             self.notebook, "notebook")
        self.cells.bind(self.torch, device)

    def _sample_both(self, phase: str):
        # Called by the OOM observer before the error unwinds: what the kernel holds *now* is part of
        # the memory that ran out (an earlier failure's traceback, old outputs), unlike what it keeps after.
        if phase == "oom" and self.torch is not None:
            try:
                self.holders_at_oom = kernel_holders.kernel_holders(self.shell, self.torch, self._cell_names())
            except Exception:
                self.holders_at_oom = None
        return self.sample(phase)

    def census(self, moment: str) -> dict | None:
        """The tensor census now, with IPython's output history as named roots and the cells as user code."""
        if not self.options.census or self.torch is None:
            return None
        names = self._cell_names()
        root = self.meta.get("source_root")
        under = os.path.join(root, "") if root else None

        def is_user_file(filename: str) -> bool:
            if filename in names:
                return True
            return bool(under) and filename.startswith(under) and "site-packages" not in filename

        try:
            return take_census(self.torch, moment, extra_roots=kernel_holders.extra_roots(self.shell),
                               is_user_file=is_user_file, device=self.recorder.device if self.recorder else None)
        except Exception:  # take_census never raises; this guards an agent whose census failed to load
            return None

    def _oom_census(self) -> dict | None:
        return self.census("oom")

    def _base_meta(self) -> dict:
        options = self.options
        source_root = options.source_root or (os.path.dirname(self.notebook) if self.notebook and os.path.isabs(self.notebook)
                                              else os.getcwd())
        facts = {"alloc_env": environment.allocator_env(), "torch": self.torch.__version__,
                 "cuda": getattr(self.torch.version, "cuda", None)}
        return self.base_meta(options.run_id, self.notebook, [], source_root, options.census, facts, None)

    # -- cells -----------------------------------------------------------------------------------
    def before_cell(self, info=None) -> None:
        if not self.active:
            return
        count = getattr(self.shell, "execution_count", None)
        self.cells.started(getattr(info, "raw_cell", "") or "", count, getattr(info, "cell_id", None),
                           getattr(info, "cell_meta", None))

    def after_cell(self, result=None) -> None:
        if not self.active:
            return
        running = self.cells.running()
        if running is None:
            return
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        count = getattr(result, "execution_count", None)
        if isinstance(count, int):  # exact here; the counter seen before the cell may be one ahead
            running["execution_count"] = count
        name = running["code_name"] or self._name_of(running)
        outcome = "ok"
        if error is not None:
            outcome = "oom" if tracebacks.is_oom(error) else "interrupted" if isinstance(error, KeyboardInterrupt) else "error"
            self.last_error, self.last_error_epoch = error, time.time()
        self.cells.finished(name, outcome)
        self.oom_kept = False
        if outcome == "oom" and self.recorder is not None:
            self.write("oom")  # the state of the failure, and what the kept traceback holds now
            self.oom_kept = True

    # -- captures --------------------------------------------------------------------------------
    def finish(self, status: str) -> str:
        """The capture at the end (stop, shutdown, a runner's last word). An OOM's capture that no cell
        ran after is kept as it is: the failure is what there is to explain."""
        if self.oom_kept and status in ("completed", "oom"):
            return self.capture
        if status == "oom":
            status = "completed"
        self.write(status)
        return self.capture

    def at_exit(self) -> None:
        if self.active:
            try:
                self.finish("completed")
            except Exception:
                pass

    def write(self, status: str) -> str:
        """Write the capture folder now. ``status``: oom | on_demand | completed | error | interrupted |
        cancelled | timeout."""
        census = None
        try:
            meta, snapshot = self._capture_contents(status)
            census = self._census_for(meta)
        except Exception as error:
            meta, snapshot = self.unreadable_meta(status, None, error), None
        failure = self.publish(self.capture, meta, snapshot, census)
        if failure:
            self.warn(failure)
            return self.capture
        self.writes += 1
        return self.capture

    def _census_for(self, meta: dict) -> dict | None:
        """The census of the snapshot's moment: the OOM observer's, or one taken now."""
        if meta.get("snapshot_moment") is None or not self.options.census:
            return None
        return self.census_at(meta, self.census)

    def _capture_contents(self, status: str):
        error = self.last_error if status in ("oom", "error", "interrupted") else None
        meta = self.ending_meta(status, None, describe_cell_error(error, self._cell_names()), self.last_error_epoch,
                                list(self.notes))
        meta["notebook"] = self._notebook_facts()
        if status == "oom":
            meta["notebook"]["kernel_holders_at_oom"] = self.holders_at_oom
        recorder = self.recorder
        if recorder is None:
            meta.update(snapshot_moment=None, oom=None, stats=None)
            meta["notes"].append("The kernel never used CUDA while recording, so there is no allocator history.")
            return meta, None
        oom = recorder.oom
        if status == "oom" and oom.snapshot is not None:
            snapshot, moment = oom.snapshot, "oom"
        else:
            snapshot, moment = recorder.snapshot_now(), "on_demand" if status == "on_demand" else "end"
        if oom.count > 1:
            meta["notes"].append(f"The kernel had {oom.count} OOMs while recording; the one recorded is the last.")
        oom_facts = dict(oom.latest, count=oom.count) if oom.latest else None
        self.allocator_meta(meta, snapshot, moment, oom_facts, exit_nvml=moment == "end")
        return meta, snapshot

    def _notebook_facts(self) -> dict:
        holders = None
        if self.torch is not None:
            holders = kernel_holders.kernel_holders(self.shell, self.torch, self._cell_names())
        return {
            "path": self.notebook,
            "kernel": _kernel_name(),
            "front_end": self.options.front_end,
            "cells": self.cells.to_json(),
            "executions_dropped": self.cells.dropped,
            "kernel_holders": holders,
        }

    def _name_of(self, running: dict) -> str | None:
        """The running cell's code name; its execution number is corrected on the way."""
        name, number = code_name_of(self.shell, running["source"], running["execution_count"])
        running["execution_count"] = number
        return name

    def _cell_names(self) -> set[str]:
        names = self.cells.known_names()
        running = self.cells.running()
        if running is not None:
            name = running["code_name"] or self._name_of(running)
            if name:
                names.add(name)
        return names

    def status_lines(self) -> list[str]:
        """`%vramlens status`: what is being recorded, and where it goes."""
        lines = [f"vramlens: {'recording' if self.active else 'not recording'} since "
                 f"{time.strftime('%H:%M:%S', time.localtime(self.started))}; captures go to {self.capture}"]
        if self.recorder is None:
            lines.append("vramlens: the kernel has not used CUDA since recording began.")
            return lines
        stats = self.recorder.stats()
        lines.append(f"vramlens: {len(self.cells.executions)} cells recorded; allocated {_gib(stats.get('allocated'))}, "
                     f"reserved {_gib(stats.get('reserved'))}, peak allocated {_gib(stats.get('peak_allocated'))}; "
                     f"{self.recorder.oom.count} OOMs")
        held = kernel_holders.kernel_holders(self.shell, self.torch, self._cell_names())
        for holder in held["holders"][:5]:
            alone = holder["exclusive_bytes"]
            amount = _gib(alone) + " only there" if alone is not None else _gib(holder["bytes"])
            lines.append(f"vramlens: {holder['root']} keeps {amount} ({holder['what']}); free it with: {holder['free']}")
        return lines


def _gib(value) -> str:
    return "?" if value is None else f"{value / 2**30:.2f} GiB"


def describe_cell_error(error: BaseException | None, cell_names: set[str]) -> dict | None:
    """The exception as capture.json records it, from the first frame of cell code inward."""
    if error is None:
        return None
    kind = type(error)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    tb = error.__traceback__
    start = tb
    while start is not None and start.tb_frame.f_code.co_filename not in cell_names:
        start = start.tb_next
    start = start or tb
    try:
        text = "".join(traceback.TracebackException(kind, error, start).format())
        frames = [{"filename": f.filename, "line": f.lineno, "name": f.name} for f in traceback.extract_tb(start)]
    except Exception:
        text, frames = f"{name}: {tracebacks.safe_str(error)}\n", []
    return {"type": name, "message": tracebacks.safe_str(error), "traceback": text, "frames": frames}


def write_status(path: str | None, data: dict) -> None:
    if path:
        try:
            write_json_atomically(path, data)
        except OSError:
            pass
