"""The IPython extension: ``%load_ext vramlens``, then ``%vramlens start|stop|snapshot|status`` and the
``%%vramlens`` cell magic.

    %vramlens start [--capture DIR] [--memory-limit 24GiB|0.25] [--stacks python|all] [--notebook NB.ipynb] [--no-census]
                    [--free-stacks]
    %vramlens snapshot      # write the capture now; recording goes on
    %vramlens status        # what is recorded, and what the kernel itself keeps alive
    %vramlens stop          # write the capture and stop recording

    %%vramlens [start's options]
    ...                     # this cell alone, recorded; its capture written when it ends

A capture is also written at an OOM in any cell and when the kernel shuts down. Stdlib, torch and
IPython only: this runs in the user's kernel.
"""

from __future__ import annotations

import argparse
import ast
import shlex
import time

from IPython.core.magic import Magics, line_cell_magic, magics_class

from . import tracebacks
from .cells import show_raw_source_in_tracebacks, code_name_of
from .kernel_session import KernelOptions, KernelRecording, parse_limit

USAGE = "%vramlens start|stop|snapshot|status [options]  (or %%vramlens [options] on the first line of a cell)"


class UsageError(ValueError):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would end the kernel's process
        raise UsageError(f"{message}. Usage: {USAGE}")


def _start_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="%vramlens start", add_help=False)
    parser.add_argument("--capture", help="capture folder (default .vramlens/captures/NOTEBOOK-TIME here)")
    parser.add_argument("--memory-limit", help="cap the allocator: 24GiB, 1600MiB or a fraction such as 0.25")
    parser.add_argument("--stacks", choices=("python", "all"), default="python")
    parser.add_argument("--max-entries", type=int, default=1_000_000)
    parser.add_argument("--notebook", help="the notebook file, when the front end does not say")
    parser.add_argument("--no-census", dest="census", action="store_false", help="record no tensor census")
    parser.add_argument("--free-stacks", action="store_true",
                        help="a stack for each free too (breaks non-reentrant activation checkpointing in torch 2.11)")
    return parser


def options_from(words: list[str]) -> KernelOptions:
    parsed = _start_parser().parse_args(words)
    if parsed.memory_limit:
        try:
            parse_limit(parsed.memory_limit)
        except ValueError as error:
            raise UsageError(f"--memory-limit: {error}.") from None
    return KernelOptions(capture=parsed.capture, stacks=parsed.stacks, max_entries=parsed.max_entries,
                         memory_limit=parsed.memory_limit, notebook=parsed.notebook, census=parsed.census,
                         free_stacks=parsed.free_stacks)


def _say(text: str) -> None:
    print(f"vramlens: {text}")


@magics_class
class VramLensMagics(Magics):
    def __init__(self, shell):
        super().__init__(shell)
        self.recording: KernelRecording | None = None

    # -- the API the notebook runner and the magics share --------------------------------------
    def start(self, options: KernelOptions) -> str | None:
        """Start recording (a sentence saying why not, or None)."""
        if self.recording is not None and self.recording.active:
            return f"already recording; captures go to {self.recording.capture}."
        recording = KernelRecording(self.shell, options)
        if self.recording is not None:
            recording.adopt(self.recording)
        problem = recording.start()
        if problem is None:
            self.recording = recording
        return problem

    # -- %vramlens and %%vramlens ---------------------------------------------------------------
    @line_cell_magic
    def vramlens(self, line: str, cell: str | None = None):
        try:
            words = shlex.split(line)
        except ValueError as error:
            _say(f"{error}. Usage: {USAGE}")
            return None
        if cell is not None:
            return self._record_cell(words, cell)
        command, rest = (words[0], words[1:]) if words else ("status", [])
        try:
            return self._line(command, rest)
        except UsageError as error:
            _say(str(error))
            return None

    def _line(self, command: str, rest: list[str]):
        recording = self.recording
        if command == "start":
            problem = self.start(options_from(rest))
            if problem:
                _say(problem)
            else:
                _say(f"recording CUDA memory in this kernel; captures go to {self.recording.capture} "
                     "(at an OOM, on `%vramlens snapshot`, on `%vramlens stop` and at shutdown).")
            return None
        if command not in ("stop", "snapshot", "status"):
            raise UsageError(f"unknown command {command!r}. Usage: {USAGE}")
        if rest:
            raise UsageError(f"`%vramlens {command}` takes no options. Usage: {USAGE}")
        if recording is None or (not recording.active and command != "status"):
            _say("not recording: start with `%vramlens start`.")
            return None
        if command == "status":
            for text in recording.status_lines():
                print(text)
        elif command == "snapshot":
            _say(f"capture written to {recording.write('on_demand')}")
        else:
            _say(f"recording stopped; capture written to {recording.stop()}")
        return None

    def _record_cell(self, words: list[str], cell: str):
        """Run the cell's body under recording, as the cell itself (its frames on the cell's own lines)."""
        try:
            options = options_from(words)
        except UsageError as error:
            _say(str(error))
            return None
        started_here = self.recording is None or not self.recording.active
        if started_here:
            problem = self.start(options)
            if problem:
                _say(f"{problem} The cell runs unrecorded.")
                return self._run(cell, self._cell_name(None, cell), 0)
        recording = self.recording
        running = recording.cells.running()
        raw = running["source"] if running else "%%vramlens\n" + cell
        name = self._cell_name(running, raw)
        recording.cells.name_running_cell(name)
        show_raw_source_in_tracebacks(name, raw)
        error = None
        try:
            return self._run(cell, name, _body_offset(raw))
        except BaseException as failure:
            error = failure
            raise
        finally:
            self._after_recorded_cell(recording, name, error, started_here)

    def _cell_name(self, running: dict | None, raw: str) -> str:
        count = running["execution_count"] if running else self.shell.execution_count
        name, number = code_name_of(self.shell, raw, count)
        if running is not None:
            running["execution_count"] = number
        return name or f"<vramlens-cell-{number}>"

    def _after_recorded_cell(self, recording: KernelRecording, name: str, error, started_here: bool) -> None:
        if error is not None:
            recording.last_error, recording.last_error_epoch = error, time.time()
            status = "oom" if tracebacks.is_oom(error) else "interrupted" if isinstance(error, KeyboardInterrupt) else "error"
        else:
            status = "completed" if started_here else "on_demand"
        recording.cells.finished(name, "ok" if error is None else status)
        where = recording.write(status)
        recording.oom_kept = status == "oom"
        if started_here:
            recording.stop(write=False)
        _say(f"capture of this cell written to {where}")

    def _run(self, body: str, name: str, offset: int):
        """Execute ``body`` in the user's namespace under ``name``, its lines numbered as in the cell;
        the value of a last bare expression is returned, so it shows (and is kept) as a cell's would be."""
        tree = ast.parse("\n" * offset + body, filename=name)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        namespace = self.shell.user_ns
        exec(compile(tree, name, "exec"), namespace)
        if last is not None:
            return eval(compile(last, name, "eval"), namespace)
        return None


def _body_offset(raw: str) -> int:
    """Lines before the body: any blank lines IPython skipped, and the ``%%vramlens`` line itself."""
    for number, text in enumerate(raw.splitlines()):
        if text.lstrip().startswith("%%"):
            return number + 1
    return 1


def magics_of(shell) -> VramLensMagics:
    """The extension's magics in this shell, registered once."""
    existing = getattr(shell, "_vramlens_magics", None)
    if existing is None:
        existing = VramLensMagics(shell)
        shell.register_magics(existing)
        shell._vramlens_magics = existing
    return existing


def load_ipython_extension(shell) -> None:
    magics_of(shell)


def unload_ipython_extension(shell) -> None:
    magics = getattr(shell, "_vramlens_magics", None)
    if magics is not None and magics.recording is not None and magics.recording.active:
        magics.recording.stop()


# -- the notebook runner's side: called through silent executions of the runner ------------------
def start_for_runner(shell, options: dict) -> str:
    """Load, start recording with the runner's options, and return the capture folder; raises
    RuntimeError with one sentence when recording cannot start."""
    magics = magics_of(shell)
    problem = magics.start(KernelOptions(**options))
    if problem:
        raise RuntimeError(problem)
    return magics.recording.capture


def finish_for_runner(shell, status: str) -> str:
    """The runner's last word: the final capture (an OOM's capture is kept as it is)."""
    magics = magics_of(shell)
    if magics.recording is None:
        raise RuntimeError("Recording was never started in this kernel.")
    where = magics.recording.finish(status)
    magics.recording.active = False  # the kernel is shut down next: no second capture at exit
    return where
