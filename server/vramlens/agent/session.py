"""One instrumented run of a user's script: preflight, recording, the script, the capture.

Recording starts when the script first initialises CUDA (torch's own queue of calls to make
right after CUDA initialisation), not before: allocator settings the script puts into the
environment before its first CUDA use take effect exactly as they would without vramlens.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from . import distributed, environment, tracebacks
from .capture_writer import write_json_atomically
from .census_moments import CensusMoments, PeakWatch
from .frame_names import frame_names
from .recording_args import recording_parser
from .recording_core import MemoryCap, RecordingCore
from .runner_watch import ENV_VAR as RUNNER_ENV_VAR
from .runner_watch import RunnerWatch
from .script_runner import execute_as_main, exit_code_of
from .source_edit import SourceEdit
from .terminate_watch import MAIN_THREAD_GRACE_S, TerminateWatch

EXIT_PREFLIGHT = 2  # same code the CLI uses for "could not start"
TREE_GRACE_S = 1.0  # an orphaned run's processes get this long after SIGTERM, then SIGKILL
RUNNER_GONE = ("vramlens, which started this run, ended before the script did: the script was ended "
               "and its capture kept.")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = recording_parser("vramlens-agent")
    parser.add_argument("--per-rank", action="store_true", help="write into CAPTURE/rank-<RANK> (under torchrun)")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    return parser.parse_args(argv)


class Session(RecordingCore):
    """The script's front end of the recording core: preflight, the script, and its ending."""

    def __init__(self, options: argparse.Namespace):
        super().__init__(options.stacks, options.max_entries, options.free_stacks)
        self.options = options
        self.script = os.path.abspath(options.script)
        self.censuses: CensusMoments | None = None
        self.peak_watch: PeakWatch | None = None
        self.exception: BaseException | None = None
        self.exception_epoch: float | None = None
        self.env_at_start = environment.allocator_env()
        self.source_edit: SourceEdit | None = None
        self.meta = self.base_meta(
            options.run_id, self.script, [options.script] + list(options.args),
            options.source_root or os.path.dirname(self.script), options.census,
            {"alloc_env": self.env_at_start}, distributed.rank_facts())

    # -- preflight: nothing is written unless the script can really run under CUDA --------
    def preflight(self) -> str | None:
        """Return one sentence saying why the run cannot start, or None when it can."""
        if not os.path.isfile(self.script):
            return f"Script not found: {self.options.script}."
        if self.options.source_edit:
            try:
                self.source_edit = SourceEdit.parse(self.options.source_edit)
                self.source_edit.read()  # once: the run reads the text checked here
            except (OSError, ValueError) as error:
                return str(error)
            self.meta["source_edit"] = self.source_edit.to_json()  # this capture is of the edited program
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
        self.meta["environment"].update(torch=torch.__version__, cuda=getattr(torch.version, "cuda", None))
        return None

    def arm(self) -> None:
        """Start recording the moment the script initialises CUDA (at once if it already is)."""
        self.torch.cuda._lazy_call(self._on_cuda_init)

    def _on_cuda_init(self) -> None:
        # torch turns an exception here into a failure of the script's first CUDA call:
        # recording must never be what breaks the user's run.
        try:
            self._start_recording()
        except Exception as error:
            self.warn(f"Recording could not start ({type(error).__name__}: {tracebacks.safe_str(error)}); the script runs unrecorded.")

    def _start_recording(self) -> None:
        torch, options = self.torch, self.options
        device = distributed.likely_device(torch) if self.meta["distributed"] else torch.cuda.current_device()
        on_oom_census = on_sample = None
        if options.census:
            self.censuses = CensusMoments(torch, self.meta["source_root"])
            self.censuses.device = device
            self.peak_watch = PeakWatch(self.censuses.take)
            on_oom_census, on_sample = self.censuses.at_oom, self.peak_watch.observe
        cap = MemoryCap(options.memory_limit_bytes, options.memory_limit_fraction, options.memory_limit_text,
                        f"--memory-limit {options.memory_limit_text}")
        self.start_recording(device, cap, self.sample, on_oom_census, options.status_file, self.script, "script",
                             on_live_sample=on_sample)

    # -- the script -----------------------------------------------------------------------
    def run_script(self) -> int:
        argv = [self.options.script] + list(self.options.args)
        try:
            execute_as_main(self.script, argv, self._edited_script_text())
            return 0
        except SystemExit as exit_request:
            return exit_code_of(exit_request)
        except BaseException as error:  # the script's own failure (Ctrl-C included), shown as Python would
            self.exception, self.exception_epoch = error, time.time()
            self._census_of_final_oom(error)
            sys.stderr.write(tracebacks.user_traceback_text(error, self.script))
            sys.stderr.flush()
            return 130 if isinstance(error, KeyboardInterrupt) else 1

    def _edited_script_text(self) -> str | None:
        """The script's text when the edit is in it; an edit of another file is read at its import."""
        edit = self.source_edit
        if edit is None:
            return None
        if edit.is_file(self.script):
            return edit.edited_text()
        edit.install_for_imports()
        return None

    def _census_of_final_oom(self, error: BaseException) -> None:
        """The OOM that ended the run always gets its census (and snapshot): taken now, when none was at it."""
        recorder = self.recorder
        if recorder is None or not tracebacks.is_oom(error):
            return
        if recorder.oom.snapshot is None:
            recorder.oom.snapshot = recorder.snapshot_now()  # its trace holds the OOM: the analysis rewinds to it
        if self.censuses is not None and recorder.oom.census is None:
            recorder.oom.census = self.censuses.at_final_oom(error)

    def status_after(self, exit_code: int) -> str:
        error = self.exception
        if isinstance(error, KeyboardInterrupt):
            return "interrupted"
        if error is not None:
            return "oom" if tracebacks.is_oom(error) else "error"
        return "completed" if exit_code == 0 else "exit"

    # -- writing the capture ------------------------------------------------------------
    def write(self, status: str, exit_code: int | None, on_demand: bool = False) -> None:
        """Write the capture; if the snapshot cannot be written, keep at least the facts."""
        try:
            meta, snapshot = self._capture_contents(status, exit_code, on_demand)
        except Exception as error:
            meta, snapshot = self.unreadable_meta(status, exit_code, error), None
        census, peak_census = self._censuses_for(meta)
        failure = self.publish(self.options.capture, meta, snapshot, census, peak_census)
        if failure:
            print(f"vramlens: {failure}", file=sys.stderr)

    def _capture_contents(self, status: str, exit_code: int | None, on_demand: bool):
        self._follow_device()
        recorder = self.recorder
        meta = self.ending_meta(status, exit_code, tracebacks.describe(self.exception, self.script), self.exception_epoch,
                                self.notes + self._environment_notes())
        if recorder is None:
            meta.update(snapshot_moment=None, oom=None, stats=None)
            meta["notes"].append("The script never initialised CUDA, so there is no allocator history.")
            return meta, None
        oom = recorder.oom
        snapshot, moment = self._choose_snapshot(on_demand)
        caught = oom.caught_below_python()
        if oom.count > 1 and caught:
            meta["notes"].append(f"The run had {oom.count} OOMs, {caught} of them caught inside libraries before "
                                 "Python saw them (cuDNN and cuBLAS try workspace sizes); the one recorded is the last.")
        elif oom.count > 1:
            meta["notes"].append(f"The run had {oom.count} OOMs; the one recorded is the last.")
        meta["frame_names"] = frame_names(snapshot)
        self.allocator_meta(meta, snapshot, moment, oom.facts(), exit_nvml=not on_demand)
        return meta, snapshot

    def _censuses_for(self, meta: dict) -> tuple[dict | None, dict | None]:
        """The census of the snapshot's moment (taken now, unless the OOM's), and the peak one."""
        censuses, moment = self.censuses, meta.get("snapshot_moment")
        if censuses is None or moment is None:
            return None, None
        # The agent keeps the exception that ended the script (and through its traceback the
        # frames' locals): named as such, not left as a holder nobody can name.
        kept = {"<the script's exception>": self.exception} if self.exception is not None else None
        census = self.census_at(meta, lambda moment: censuses.take(moment, extra_roots=kept))
        meta.setdefault("notes", []).extend(censuses.notes())
        return census, self.peak_watch.census if self.peak_watch else None

    def _follow_device(self) -> None:
        """A rank picks its device after recording began: describe the device it really used."""
        facts = self.meta.get("distributed")
        if facts is None or self.recorder is None:
            return
        try:
            device = distributed.device_in_use(self.torch, self.torch.cuda.current_device())
            if device != self.recorder.device:
                gpu = environment.gpu_facts(self.torch, device, self.nvml.driver_version())
                gpu["alloc_env"] = self.env_at_cuda_init or gpu["alloc_env"]
                self.meta["environment"] = gpu
                self.recorder.device = device
                if self.censuses is not None:
                    self.censuses.device = device
                self.nvml.bind(gpu["gpu_uuid"], device)
        except Exception as error:  # the facts of the first device stay: never lose the capture over this
            self.warn(f"The rank's device could not be read again ({type(error).__name__}).")
            return
        facts["device_index"] = device
        facts["backend"] = distributed.backend(self.torch)

    def _choose_snapshot(self, on_demand: bool):
        # When the OOM ended the run, the state at the OOM is the one to explain; the frees
        # made while the exception unwound would only blur it.
        oom = self.recorder.oom
        if not on_demand and tracebacks.is_oom(self.exception) and oom.snapshot is not None:
            return oom.snapshot, "oom"
        return self.recorder.snapshot_now(), "on_demand" if on_demand else "end"

    def _environment_notes(self) -> list[str]:
        notes = []
        now = environment.allocator_env()
        if self.env_at_cuda_init is not None:
            for name in sorted(set(now) | set(self.env_at_cuda_init)):
                if now.get(name) != self.env_at_cuda_init.get(name):
                    notes.append(f"{name} was changed after CUDA was initialised; it had no effect on this run.")
            before = self.env_at_start.get("CUDA_VISIBLE_DEVICES")
            if before != self.env_at_cuda_init.get("CUDA_VISIBLE_DEVICES"):
                notes.append("CUDA_VISIBLE_DEVICES was set by the script after vramlens had checked for CUDA: "
                             "set it before starting vramlens for it to choose the device.")
        return notes


def _per_rank_paths(options: argparse.Namespace) -> None:
    """Under torchrun every rank writes CAPTURE/rank-<RANK>, beside the other ranks of its node."""
    name = distributed.rank_folder_name()
    options.capture = os.path.join(options.capture, name)
    options.status_file = f"{options.status_file}.{name}"


def _end_own_tree() -> None:
    """An orphaned run: nothing else will end what the script started. Only a group of our own is
    ended (a rank under torchrun shares torchrun's, which ends its ranks itself)."""
    try:
        if os.getpgid(0) != os.getpid():
            return
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.killpg(0, signal.SIGTERM)
        time.sleep(TREE_GRACE_S)
        os.killpg(0, signal.SIGKILL)
    except OSError:
        pass


def main(argv: list[str]) -> int:
    options = parse_args(argv)
    if options.per_rank:
        _per_rank_paths(options)
    agent_pid = os.getpid()
    session: Session | None = None
    orphaned = False

    def finish(signum):
        if session is not None and session.torch is not None:
            session.link.writing_capture()
            session.write("terminated", 128 + signum)
            sys.stdout.flush()
        if orphaned:
            _end_own_tree()
        os._exit(128 + signum)

    watch = TerminateWatch(finish)

    def end_requested(runner_gone: bool) -> None:
        """The runner asked for the end (or is gone): as on SIGTERM, even if the script ignores that."""
        nonlocal orphaned
        if runner_gone:
            orphaned = True
            if session is not None:
                session.notes.append(RUNNER_GONE)
        try:
            os.kill(agent_pid, signal.SIGTERM)  # the main thread's own handler writes the capture, as usual
        except OSError:
            pass
        time.sleep(MAIN_THREAD_GRACE_S)
        if watch.claim():  # the script ignores SIGTERM, or its main thread is stuck: write it from here
            finish(signal.SIGTERM)

    # Installed first, so a timeout during the import of torch still ends us cleanly.
    # Forked children (data loader workers) inherit these handlers; only the agent's own
    # process may write the capture, so a child just ends as it would have.
    def on_terminate(signum, frame):
        if os.getpid() != agent_pid:
            os._exit(128 + signum)
        if not watch.claim():
            time.sleep(60)  # the watcher thread is writing the capture and ends the process
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        finish(signum)

    def on_demand(signum, frame):
        if os.getpid() == agent_pid and session is not None:
            session.write("on_demand", None, on_demand=True)

    signal.signal(signal.SIGTERM, on_terminate)
    signal.signal(signal.SIGUSR1, on_demand)
    watch.start()
    session = Session(options)
    RunnerWatch(end_requested).start(session.link.control_fd, os.environ.pop(RUNNER_ENV_VAR, None))
    problem = session.preflight()
    if problem:
        write_json_atomically(options.status_file, {"phase": "preflight", "ok": False, "message": problem})
        return EXIT_PREFLIGHT
    write_json_atomically(options.status_file, {"phase": "running", "ok": True, "pid": agent_pid})
    session.arm()
    session.link.request_sample("script_start")
    exit_code = session.run_script()
    session.link.request_sample("exit")
    # The final write must finish: a late SIGTERM waits (the runner kills us after its grace).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    if not watch.claim():
        time.sleep(60)  # a SIGTERM came first: the watcher thread writes that capture and ends us
    session.link.writing_capture()
    session.write(session.status_after(exit_code), exit_code)
    sys.stdout.flush()
    return exit_code
