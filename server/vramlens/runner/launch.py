"""Start the agent in the user's interpreter, keep watch, end it at the timeout, finish the capture."""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from vramlens.agent.capture_writer import META_FILE, write_json_atomically
from vramlens.agent.runner_link import ENV_VAR as LINK_ENV_VAR
from vramlens.capture.errors import CaptureError
from vramlens.runner.nvml_sampler import NvmlSampler, samples_for_device

AGENT_SCRIPT = Path(__file__).resolve().parent.parent / "agent" / "launch.py"
TERMINATE_GRACE_S = 30.0  # time the agent gets to write its capture after SIGTERM


@dataclass
class RunOptions:
    script: Path
    args: list[str] = field(default_factory=list)
    python: str = sys.executable
    capture_dir: Path | None = None
    stacks: str = "python"
    max_entries: int = 1_000_000
    memory_limit_bytes: int | None = None
    memory_limit_fraction: float | None = None
    memory_limit_text: str | None = None
    timeout_s: float | None = None
    sample_interval_s: float = 0.5
    source_root: Path | None = None
    extra_env: dict = field(default_factory=dict)


@dataclass
class RunResult:
    exit_code: int  # the script's, as the user would have seen it
    capture_dir: Path | None  # None when nothing could be captured
    status: str


def default_capture_dir(script: Path) -> Path:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return Path.cwd() / ".vramlens" / "captures" / f"{script.stem}-{stamp}"


def run_script(options: RunOptions) -> RunResult:
    script = Path(options.script)
    if not script.is_file():
        raise CaptureError(f"Script not found: {script}.")
    capture_dir = Path(options.capture_dir or default_capture_dir(script)).resolve()
    with tempfile.TemporaryDirectory(prefix="vramlens-run-") as scratch:
        status_file = Path(scratch) / "status.json"
        command = _agent_command(options, script, capture_dir, status_file)
        return _supervise(options, command, capture_dir, status_file)


def _agent_command(options: RunOptions, script: Path, capture_dir: Path, status_file: Path) -> list[str]:
    command = [options.python, str(AGENT_SCRIPT), "--capture", str(capture_dir), "--status-file", str(status_file)]
    command += ["--stacks", options.stacks, "--max-entries", str(options.max_entries)]
    if options.memory_limit_bytes is not None:
        command += ["--memory-limit-bytes", str(options.memory_limit_bytes)]
    if options.memory_limit_fraction is not None:
        command += ["--memory-limit-fraction", repr(options.memory_limit_fraction)]
    if options.memory_limit_text:
        command += ["--memory-limit-text", options.memory_limit_text]
    if options.source_root:
        command += ["--source-root", str(Path(options.source_root).resolve())]
    return command + ["--", str(script), *options.args]


def _supervise(options: RunOptions, command: list[str], capture_dir: Path, status_file: Path) -> RunResult:
    events_read, events_write = os.pipe()
    acks_read, acks_write = os.pipe()
    env = dict(os.environ, **options.extra_env)
    env[LINK_ENV_VAR] = f"{events_write},{acks_read}"
    env.setdefault("PYTHONUNBUFFERED", "1")
    started = time.time()
    try:
        child = subprocess.Popen(
            command, env=env, pass_fds=(events_write, acks_read), start_new_session=True  # its own group: we end the whole tree
        )
    except OSError as error:
        raise CaptureError(f"Cannot start the interpreter {options.python} ({error.strerror}); check --python.") from None
    finally:
        os.close(events_write)
        os.close(acks_read)
    sampler = NvmlSampler(options.sample_interval_s)
    sampler.start(child.pid, events_read, acks_write, started)
    timed_out = interrupted = False
    try:
        exit_code, timed_out, interrupted = _wait(child, options.timeout_s)
    finally:
        sampler.stop()
        os.close(events_read)
        os.close(acks_write)
        _end_process_group(child.pid)
    status = _read_status(status_file)
    if status.get("ok") is False:
        raise CaptureError(status.get("message", "The script could not be started."))
    if not (capture_dir / META_FILE).is_file():
        how = "timed out" if timed_out else f"exited with code {exit_code}"
        raise CaptureError(f"The script {how} before a capture could be written (it may have been killed); nothing was recorded.")
    final_status = _finish_capture(capture_dir, sampler, child.pid, timed_out, interrupted, options)
    if timed_out:
        exit_code = 124
    return RunResult(exit_code=exit_code, capture_dir=capture_dir, status=final_status)


def _wait(child: subprocess.Popen, timeout_s: float | None) -> tuple[int, bool, bool]:
    deadline = time.monotonic() + timeout_s if timeout_s else None
    interrupted = False
    while True:
        try:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            return child.wait(timeout=remaining), False, interrupted
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGTERM)  # the agent writes its capture, then exits
            try:
                return child.wait(timeout=TERMINATE_GRACE_S), True, interrupted
            except subprocess.TimeoutExpired:
                _end_process_group(child.pid, signal.SIGKILL)
                return child.wait(), True, interrupted
        except KeyboardInterrupt:
            if interrupted:  # a second Ctrl-C: stop waiting for a graceful end
                _end_process_group(child.pid, signal.SIGKILL)
                return child.wait(), False, True
            interrupted = True
            child.send_signal(signal.SIGINT)  # the script sees its KeyboardInterrupt, as in a terminal


def _end_process_group(pid: int, sig: int = signal.SIGTERM) -> None:
    """End what the script left running (data loader workers, servers): the whole group."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _read_status(status_file: Path) -> dict:
    try:
        return json.loads(status_file.read_text())
    except (OSError, ValueError):
        return {}


def _finish_capture(capture_dir: Path, sampler: NvmlSampler, pid: int, timed_out: bool, interrupted: bool, options: RunOptions) -> str:
    """Add what the server side measured, and how the run ended, to the agent's capture.json."""
    meta_path = capture_dir / META_FILE
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    facts = meta.get("environment") or {}
    meta["nvml"] = {
        "available": sampler.available,
        "error": sampler.error,
        "pid": pid,
        "samples": samples_for_device(sampler.samples, pid, facts.get("gpu_uuid"), facts.get("device_index")),
    }
    if timed_out:
        meta["status"] = "timeout"
        meta["exit_code"] = 124
        meta.setdefault("notes", []).append(f"Ended by vramlens after the --timeout of {options.timeout_s:g} s.")
    elif interrupted and meta.get("status") == "completed":
        meta["status"] = "interrupted"
    write_json_atomically(str(meta_path), meta)
    return meta["status"]
