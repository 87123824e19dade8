"""One instrumented run of a user's script: preflight, recording, the script, the capture."""

from __future__ import annotations

import argparse
import datetime
import os
import runpy
import signal
import sys
import time
import traceback

from . import environment
from .capture_writer import write_capture, write_json_atomically
from .nvml_probe import NvmlProbe
from .recorder import Recorder
from .runner_link import RunnerLink

EXIT_PREFLIGHT = 2  # same code the CLI uses for "could not start"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="vramlens-agent")
    parser.add_argument("--capture", required=True)
    parser.add_argument("--status-file", required=True)
    parser.add_argument("--stacks", choices=("python", "all"), default="python")
    parser.add_argument("--max-entries", type=int, default=1_000_000)
    parser.add_argument("--memory-limit-bytes", type=int)
    parser.add_argument("--memory-limit-fraction", type=float)
    parser.add_argument("--memory-limit-text")
    parser.add_argument("--source-root")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    return parser.parse_args(argv)


class Session:
    def __init__(self, options: argparse.Namespace):
        self.options = options
        self.started = time.time()
        self.link = RunnerLink.from_environment()
        self.nvml = NvmlProbe()
        self.torch = None
        self.recorder: Recorder | None = None
        self.meta: dict = {}
        self.exception: BaseException | None = None

    # -- preflight: nothing is written unless the script can really run under CUDA --------
    def preflight(self) -> str | None:
        """Return one sentence saying why the run cannot start, or None when it can."""
        options = self.options
        if not os.path.isfile(options.script):
            return f"Script not found: {options.script}."
        try:
            import torch
        except ImportError as error:
            return f"PyTorch cannot be imported in {sys.executable} ({error}); choose the interpreter that has torch with --python."
        self.torch = torch
        if not torch.cuda.is_available():
            built = getattr(torch.version, "cuda", None)
            reason = "this torch build has no CUDA support" if not built else "no CUDA device or driver is visible"
            return (
                f"CUDA is not available in {sys.executable} (torch {torch.__version__}: {reason}); "
                "run on a machine with an NVIDIA GPU, or analyze a capture recorded elsewhere with `vramlens analyze`."
            )
        return None

    def start_recording(self) -> str | None:
        torch, options = self.torch, self.options
        torch.cuda.init()
        device = torch.cuda.current_device()
        facts = environment.gpu_facts(torch, device, self.nvml.driver_version())
        self.nvml.bind(facts["gpu_uuid"], device)
        limit = self._apply_memory_limit(device, facts["total_memory"])
        if isinstance(limit, str):
            return limit
        self.recorder = Recorder(torch, device, options.stacks, options.max_entries, self._sample_both)
        self.recorder.start()
        self.meta = {
            "started_at": datetime.datetime.fromtimestamp(self.started, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "script": os.path.abspath(options.script),
            "argv": [options.script] + list(options.args),
            "cwd": os.getcwd(),
            "source_root": os.path.abspath(options.source_root or os.path.dirname(os.path.abspath(options.script))),
            "python": environment.python_facts(),
            "recording": {"stacks": options.stacks, "max_entries": options.max_entries, "context": "all"},
            "memory_limit": limit,
            "environment": facts,
            "nvml_agent": {"available": self.nvml.error is None, "error": self.nvml.error},
            "notes": [],
        }
        return None

    def _apply_memory_limit(self, device: int, total: int):
        options = self.options
        if options.memory_limit_bytes is None and options.memory_limit_fraction is None:
            return None
        fraction = options.memory_limit_fraction
        if fraction is None:
            fraction = options.memory_limit_bytes / total
        if not 0 < fraction <= 1:
            return f"--memory-limit {options.memory_limit_text} is more than this GPU's {total / 2**30:.1f} GiB."
        self.torch.cuda.set_per_process_memory_fraction(fraction, device)
        return {"requested": options.memory_limit_text, "fraction": fraction, "bytes": int(fraction * total)}

    def _sample_both(self, phase: str):
        self.link.request_sample(phase)  # the server side samples by our PID meanwhile
        return self.nvml.sample(phase, time.time() - self.started)

    # -- the script -----------------------------------------------------------------------
    def run_script(self) -> int:
        options = self.options
        script = os.path.abspath(options.script)
        sys.argv = [options.script] + list(options.args)
        sys.path.insert(0, os.path.dirname(script))
        try:
            runpy.run_path(script, run_name="__main__")
            return 0
        except SystemExit as exit_request:
            return _exit_code(exit_request.code)
        except KeyboardInterrupt as error:
            self.exception = error
            _print_user_traceback(error, script)
            return 130
        except BaseException as error:  # the script's own failure, reported as Python would
            self.exception = error
            _print_user_traceback(error, script)
            return 1

    # -- writing the capture ------------------------------------------------------------
    def write(self, status: str, exit_code: int | None, snapshot: dict | None = None) -> None:
        recorder = self.recorder
        oom = recorder.oom
        if snapshot is None:
            snapshot, moment = self._choose_snapshot()
        else:
            moment = status
        meta = dict(self.meta)
        if isinstance(snapshot, dict) and snapshot.get("allocator_settings") is not None:
            # torch 2.3+ reports the settings actually in force, parsed: keep them with the env vars.
            meta["environment"] = dict(meta["environment"], allocator_settings=snapshot["allocator_settings"])
        meta.update(
            status=status,
            exit_code=exit_code,
            duration_s=round(time.time() - self.started, 3),
            snapshot_moment=moment,
            exception=_describe_exception(self.exception, self.meta.get("script")),
            oom=dict(oom.first, count=oom.count) if oom.first else None,
            stats=recorder.stats(),
            exit_nvml=self.nvml.sample("exit", time.time() - self.started) if status != "on_demand" else None,
        )
        write_capture(self.options.capture, meta, snapshot)

    def _choose_snapshot(self):
        # When the OOM ended the run, the state at the OOM is the one to explain; the frees
        # made while the exception unwound would only blur it.
        oom = self.recorder.oom
        ended_by_oom = self.exception is not None and _is_oom(self.exception)
        if ended_by_oom and oom.snapshot is not None:
            return oom.snapshot, "oom"
        return self.recorder.snapshot_now(), "end"


def _is_oom(error: BaseException) -> bool:
    return type(error).__name__ == "OutOfMemoryError" or "CUDA out of memory" in str(error)


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _user_frames(tb, script: str | None):
    """Frames from the script's first one inward: the agent's own frames are not the user's."""
    frames = traceback.extract_tb(tb)
    for index, frame in enumerate(frames):
        if script and os.path.abspath(frame.filename) == script:
            return frames[index:]
    return [frame for frame in frames if not frame.filename.startswith(os.path.dirname(os.path.abspath(__file__)))]


def _print_user_traceback(error: BaseException, script: str) -> None:
    frames = _user_frames(error.__traceback__, script)
    text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
    text += "".join(traceback.format_exception_only(type(error), error))
    sys.stderr.write(text)
    sys.stderr.flush()


def _describe_exception(error: BaseException | None, script: str | None) -> dict | None:
    if error is None:
        return None
    frames = _user_frames(error.__traceback__, script)
    kind = type(error)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    return {
        "type": name,
        "message": str(error),
        "traceback": "Traceback (most recent call last):\n"
        + "".join(traceback.format_list(frames))
        + "".join(traceback.format_exception_only(kind, error)),
        "frames": [{"filename": f.filename, "line": f.lineno, "name": f.name} for f in frames],
    }


def _report_preflight(status_file: str, message: str) -> int:
    write_json_atomically(status_file, {"phase": "preflight", "ok": False, "message": message})
    return EXIT_PREFLIGHT


def main(argv: list[str]) -> int:
    options = parse_args(argv)
    session = Session(options)
    problem = session.preflight() or session.start_recording()
    if problem:
        return _report_preflight(options.status_file, problem)
    write_json_atomically(options.status_file, {"phase": "running", "ok": True, "pid": os.getpid()})

    agent_pid = os.getpid()

    # Forked children (data loader workers) inherit these handlers; only the agent's own
    # process may write the capture, so a child just ends as it would have.
    def on_demand(signum, frame):
        if os.getpid() == agent_pid:
            session.write("on_demand", None, snapshot=session.recorder.snapshot_now())

    def on_terminate(signum, frame):
        # The timeout (or a kill request): keep what was recorded, then stop at once.
        if os.getpid() == agent_pid:
            session.write("terminated", 128 + signum)
            sys.stdout.flush()
        os._exit(128 + signum)

    signal.signal(signal.SIGUSR1, on_demand)
    signal.signal(signal.SIGTERM, on_terminate)
    session.link.request_sample("script_start")
    exit_code = session.run_script()
    error = session.exception
    if isinstance(error, KeyboardInterrupt):
        status = "interrupted"
    elif error is not None:
        status = "oom" if _is_oom(error) else "error"
    else:
        status = "completed" if exit_code == 0 else "exit"
    session.link.request_sample("exit")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    session.write(status, exit_code)
    sys.stdout.flush()
    return exit_code
