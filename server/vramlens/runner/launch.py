"""Start the agent in the user's interpreter, keep watch, and finish the capture it wrote."""

from __future__ import annotations

import datetime
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable

from vramlens.agent.capture_writer import FORMAT_NAME, META_FILE, write_json_atomically
from vramlens.agent.runner_link import ENV_VAR as LINK_ENV_VAR
from vramlens.agent.runner_watch import ENV_VAR as RUNNER_ENV_VAR
from vramlens.agent.runner_watch import runner_identity
from vramlens.capture.errors import CaptureError
from vramlens.runner.script_env import script_environment
from vramlens.runner.nvml_sampler import NvmlSampler, samples_for_device
from vramlens.runner.status_watch import StatusWatch
from vramlens.runner.supervise import Supervisor, end_process_tree

AGENT_SCRIPT = Path(__file__).resolve().parent.parent / "agent" / "launch.py"
EXIT_CODES = {"timeout": 124, "terminated": 143, "cancelled": 143}
EXIT_NOT_STARTED = 2  # the run could not start (the agent's preflight): the CLI's code for "could not start"
_ENDINGS = {
    "timeout": "Ended by vramlens after the --timeout of {timeout:g} s.",
    "cancelled": "Ended by vramlens when the run was cancelled.",
    "terminated": "Ended when vramlens was asked to stop (SIGTERM or SIGHUP).",
}


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
    census: bool = True  # the tensor census at the OOM, the peak, the end and on demand
    free_stacks: bool = False  # a stack for each free too: risky (agent/recorder.py says why)
    # one line of the user's code as the run reads it ({path, line, before, after}), the file untouched:
    # how an experiment measures a fix (agent/source_edit.py)
    source_edit: dict | None = None
    extra_env: dict = field(default_factory=dict)
    cancel: threading.Event | None = None  # set it to end the run, keeping the capture
    on_start: Callable[[int], None] | None = None  # called with the script's PID
    on_status: Callable[[dict], None] | None = None  # called with the agent's live {allocated, reserved, ...}
    on_progress: Callable[[dict], None] | None = None  # a notebook's run: {cell, code_cell, code_cells} as each cell starts
    cwd: Path | None = None  # the script's working folder (default: ours)
    output: IO | None = None  # where the script's stdout and stderr go (default: ours), e.g. under a language server


@dataclass
class RunResult:
    exit_code: int  # the script's, as the user would have seen it
    capture_dir: Path
    status: str


class NoCaptureWritten(CaptureError):
    """The run ended before any capture of it was written (a script's os._exit, a killed interpreter, a
    kernel that died, torchrun refusing its options). ``exit_code`` is the exit status to end with: the
    run's own, as the user would have seen it, and never 0 (nothing recorded is no success)."""

    def __init__(self, sentence: str, run_exit_code: int):
        super().__init__(sentence)
        self.exit_code = run_exit_code or EXIT_NOT_STARTED


def fresh_folder(kind: str, script: Path, folder: Path | None = None) -> Path:
    """FOLDER/.vramlens/KIND/SCRIPT-TIME (a -2, -3… suffix when taken), in the current folder unless told."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = (folder or Path.cwd()) / ".vramlens" / kind / f"{Path(script).stem}-{stamp}"
    candidate, number = base, 1
    while candidate.exists():
        number += 1
        candidate = base.with_name(f"{base.name}-{number}")
    return candidate


def default_capture_dir(script: Path, folder: Path | None = None) -> Path:
    return fresh_folder("captures", script, folder)


def check_capture_target(folder: Path) -> None:
    """A capture may replace an older capture, never a folder of something else."""
    if not folder.exists():
        return
    if not folder.is_dir():
        raise CaptureError(f"{folder} is a file; choose a folder for the capture with -o.")
    if not any(folder.iterdir()):
        return
    if read_json(folder / META_FILE).get("format") != FORMAT_NAME:
        raise CaptureError(f"{folder} already exists and is not a capture; choose another folder with -o.")


def prepare_run(options: RunOptions, check_target: Callable[[Path], None]) -> tuple[Path, Path, str]:
    """The script (which must exist), the capture folder (checked by ``check_target``) and a fresh run id."""
    script = Path(options.script)
    if not script.is_file():
        raise CaptureError(f"Script not found: {script}.")
    capture_dir = Path(options.capture_dir or default_capture_dir(script)).resolve()
    check_target(capture_dir)
    return script, capture_dir, secrets.token_hex(8)


def run_script(options: RunOptions) -> RunResult:
    script, capture_dir, run_id = prepare_run(options, check_capture_target)
    with tempfile.TemporaryDirectory(prefix="vramlens-run-") as scratch:
        status_file = Path(scratch) / "status.json"
        command = [options.python, str(AGENT_SCRIPT), *agent_arguments(options, script, capture_dir, status_file, run_id)]
        return _supervise(options, command, capture_dir, status_file, run_id)


def agent_arguments(options: RunOptions, script: Path, capture_dir: Path, status_file: Path, run_id: str) -> list[str]:
    """The agent's command line after its path: where to write, what to record, then the script."""
    command = ["--capture", str(capture_dir), "--status-file", str(status_file)]
    command += ["--run-id", run_id, "--stacks", options.stacks, "--max-entries", str(options.max_entries)]
    if options.memory_limit_bytes is not None:
        command += ["--memory-limit-bytes", str(options.memory_limit_bytes)]
    if options.memory_limit_fraction is not None:
        command += ["--memory-limit-fraction", repr(options.memory_limit_fraction)]
    if options.memory_limit_text:
        command += ["--memory-limit-text", options.memory_limit_text]
    if options.source_root:
        command += ["--source-root", str(Path(options.source_root).resolve())]
    if not options.census:
        command.append("--no-census")
    if options.free_stacks:
        command.append("--free-stacks")
    if options.source_edit:
        command += ["--source-edit", json.dumps(options.source_edit)]
    return command + ["--", str(script), *options.args]


@dataclass
class Watched:
    """How a started process ended, and what was sampled meanwhile."""

    pid: int
    exit_code: int  # as the user would see it: the timeout's 124, 128+N for a signal
    ending: str | None  # timeout | cancelled | terminated when vramlens ended it
    sampler: NvmlSampler


def start_and_watch(options: RunOptions, command: list[str], link_to_agent: bool = True,
                    status_file: Path | None = None) -> Watched:
    """Start ``command`` in a session of its own, sample NVML by its PID, and keep watch until it ends.

    ``link_to_agent``: pass the agent the pipe on which it asks for NVML samples at its OOM and exit.
    ``status_file``: where the agent writes its live figures, passed on to ``options.on_status``."""
    env = script_environment(options.extra_env)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env[RUNNER_ENV_VAR] = runner_identity()  # ranks without a link watch for this process instead
    events_read = acks_write = control_write = None
    passed: tuple = ()
    if link_to_agent:
        events_read, events_write = os.pipe()
        acks_read, acks_write = os.pipe()
        control_read, control_write = os.pipe()  # ours to write on: ask the agent to end; closed when we die
        passed = (events_write, acks_read, control_read)
        env[LINK_ENV_VAR] = f"{events_write},{acks_read},{control_read}"
    started = time.time()
    supervisor = Supervisor(options.timeout_s, options.cancel)
    with supervisor.signals():  # before the start: a Ctrl-C while the agent starts still reaches it
        try:
            # A session of its own, so that the whole tree it starts can be ended with it.
            child = subprocess.Popen(command, env=env, pass_fds=passed, start_new_session=True,
                                     cwd=options.cwd, stdout=options.output, stderr=options.output)
        except OSError as error:
            for fd in (events_read, acks_write, control_write):
                if fd is not None:
                    os.close(fd)
            raise CaptureError(f"Cannot start the interpreter {options.python} ({error.strerror}); check --python.") from None
        finally:
            for fd in passed:
                os.close(fd)
        sampler = NvmlSampler(options.sample_interval_s)
        sampler.start(child.pid, events_read, acks_write, started)
        supervisor.attach(child, control_fd=control_write, writing=sampler.writing)
        if options.on_start:
            options.on_start(child.pid)
        watch = StatusWatch(status_file, options.on_status).start() if options.on_status and status_file else None
        try:
            exit_code = supervisor.wait()
        finally:
            if watch:
                watch.stop()
            sampler.stop()
            for fd in (events_read, acks_write, control_write):
                if fd is not None:
                    os.close(fd)
            end_process_tree(child.pid)
    if supervisor.ending:
        exit_code = EXIT_CODES[supervisor.ending]
    elif exit_code < 0:
        exit_code = 128 - exit_code  # killed by a signal: the shell's convention
    return Watched(pid=child.pid, exit_code=exit_code, ending=supervisor.ending, sampler=sampler)


def _supervise(options: RunOptions, command: list[str], capture_dir: Path, status_file: Path, run_id: str) -> RunResult:
    watched = start_and_watch(options, command, status_file=status_file)
    check_started(read_json(status_file), "The script could not be started.")
    written = captures_of_run([capture_dir], run_id)
    if not written:
        raise NoCaptureWritten(f"The script {how_it_ended(watched)} before a capture could be written (os._exit, or "
                               "the interpreter was killed); nothing was recorded.", watched.exit_code)
    [(_, meta)] = written
    final_status = finish_capture(capture_dir, meta, watched.sampler, watched.pid, watched.ending, watched.exit_code, options)
    return RunResult(exit_code=watched.exit_code, capture_dir=capture_dir, status=final_status)


def check_started(status: dict, otherwise: str) -> None:
    """The agent's refusal to start (no torch, no CUDA, no ipykernel…): its sentence, and exit status 2."""
    if status.get("ok") is False and status.get("phase", "preflight") == "preflight":
        raise CaptureError(status.get("message", otherwise))


def captures_of_run(folders, run_id: str) -> list[tuple[Path, dict]]:
    """Did this run write its capture: the folders among ``folders`` whose capture.json is this run's
    (an older run's capture left there is never passed off as this one), with what each holds."""
    found = []
    for folder in folders:
        meta = read_json(folder / META_FILE)
        if meta.get("run_id") == run_id:
            found.append((folder, meta))
    return found


def how_it_ended(watched: Watched) -> str:
    return f"was ended ({watched.ending})" if watched.ending else f"exited with code {watched.exit_code}"


def read_json(path: Path) -> dict:
    """A JSON object the agent wrote, or {} when it is missing or not one (the agent died first)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def finish_capture(capture_dir: Path, meta: dict, sampler: NvmlSampler, pid: int, ending: str | None,
                    exit_code: int, options: RunOptions) -> str:
    """Add what the server side measured, and how the run ended, to the agent's capture.json."""
    facts = meta.get("environment") or {}
    meta["nvml"] = {
        "available": sampler.available,
        "error": sampler.error,
        "pid": pid,
        "samples": samples_for_device(sampler.samples, pid, facts.get("gpu_uuid"), facts.get("device_index")),
    }
    if ending:
        meta["status"] = ending
        meta["exit_code"] = exit_code
        meta.setdefault("notes", []).append(_ENDINGS[ending].format(timeout=options.timeout_s))
    write_json_atomically(str(capture_dir / META_FILE), meta)
    return meta["status"]
