"""`vramlens run`: run a script under allocator instrumentation and write a capture."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from vramlens.capture.errors import CaptureError
from vramlens.runner import RunOptions
from vramlens.runner.launch import EXIT_NOT_STARTED, NoCaptureWritten
from vramlens.experiments.try_alloc_conf import run_with_experiments
from vramlens.runner.notebook import is_notebook, run_notebook
from vramlens.runner.torchrun import run_torchrun, split_torchrun_command
from vramlens.safe_text import one_line
from vramlens.units import parse_size_or_fraction


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        usage="vramlens run [options] SCRIPT [ARGS ...]\n       vramlens run [options] NOTEBOOK.ipynb\n"
              "       vramlens run [options] --torchrun [TORCHRUN OPTIONS] SCRIPT [ARGS ...]",
        help="run a script under CUDA memory instrumentation and write a capture",
        description="Run SCRIPT in the chosen interpreter as if run directly (a .ipynb notebook: its cells in order, in "
        "a fresh kernel of that interpreter, which needs ipykernel), recording the allocator's "
        "history, the OOM (if any) and NVML samples into a capture folder.",
        epilog="Exit status: the run's own, as running it without vramlens would give it (a notebook: 0, or 1 when a "
        "cell failed); 124 after --timeout, 143 when ended by SIGTERM; the run's own (never 0) when it ended before "
        "any capture of it was written, for a script, a notebook and torchrun alike; 2 when it could not start "
        "(options, no torch or CUDA in that interpreter, no ipykernel for a notebook).",
    )
    parser.add_argument("--python", default=sys.executable, help="interpreter that has torch (default: this one)")
    parser.add_argument("-o", "--output", type=Path, help="capture folder (default: .vramlens/captures/SCRIPT-TIME)")
    parser.add_argument("--stacks", choices=("python", "all"), default="python", help="python (cheap, default) or all (adds C++ frames)")
    parser.add_argument("--max-entries", type=_positive_int, default=1_000_000, help="allocator history kept (ring buffer; default 1000000)")
    parser.add_argument("--memory-limit", metavar="SIZE|FRACTION", help="cap the allocator, e.g. 24GiB or 0.2: would it fit on a smaller card?")
    parser.add_argument("--timeout", type=_positive_float, metavar="SECONDS", help="end the script (and its process tree) after this long, keeping the capture")
    parser.add_argument("--sample-interval", type=_positive_float, default=0.5, metavar="SECONDS", help="NVML sampling period (default 0.5)")
    parser.add_argument("--source-root", type=Path, help="folder of the user's code (default: the script's folder)")
    parser.add_argument("--no-census", dest="census", action="store_false",
                        help="record no tensor census (which tensors are parameters, gradients, optimizer state, "
                        "and who holds the rest): the bare allocator history")
    parser.add_argument(
        "--free-stacks", action="store_true",
        help="also gather a Python stack at every free (the analysis uses none; off by default). Known failure: with "
        "torch 2.11 it breaks non-reentrant activation checkpointing (transformers' gradient_checkpointing_enable(), "
        "torch.utils.checkpoint with use_reentrant=False), whose backward() then fails with \"SystemError: ... "
        "run_backward ... returned NULL without setting an exception\"",
    )
    parser.add_argument(
        "--try-alloc-conf", action="append", default=[], metavar="SETTING",
        help="then run again with this allocator setting (e.g. expandable_segments:True) and record both; repeatable",
    )
    parser.add_argument("--analyze", action="store_true", help="print the analysis of the capture when the run ends")
    parser.add_argument(
        "--confirm", action="store_true",
        help="then run the experiment that separates the two most likely causes (e.g. expandable_segments:True for "
        "fragmentation vs working set, fewer steps for growth vs working set) and report the cause as confirmed by "
        "measurement or revised",
    )
    parser.add_argument("--confirm-repeats", type=_positive_int, default=1, metavar="N",
                        help="runs of each side of the confirming experiment (default 1)")
    parser.add_argument("--compare-to", metavar="BEFORE",
                        help="then compare the new capture with BEFORE (an earlier capture of the script, e.g. before "
                        "your change), as `vramlens diff BEFORE NEW` prints it")
    # Everything after --torchrun is torchrun's: its options, then SCRIPT and ARGS (so it comes last).
    parser.add_argument(
        "--torchrun", nargs=argparse.REMAINDER, metavar="TORCHRUN_OPTIONS SCRIPT ARGS",
        help="launch through torchrun (its options follow, then SCRIPT): every rank runs under the agent and "
        "writes OUTPUT/rank-<RANK>; on several nodes run this on each node",
    )
    # One REMAINDER positional keeps the script's own arguments exactly as typed, a `--` among
    # them included (two positionals would let argparse swallow it).
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS ...]",
                        help="the script, then the arguments passed to it unchanged")
    parser.set_defaults(handler=handle)


def split_command(command: list[str]) -> tuple[Path, list[str]] | None:
    """SCRIPT and its arguments; a `--` before SCRIPT only separates vramlens' own options."""
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        return None
    return Path(command[0]), command[1:]


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than zero, not {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than zero, not {text}")
    return value


def _announce(script: Path, through_torchrun: bool):
    def on_start(pid: int) -> None:
        if through_torchrun:
            print(one_line(f"vramlens: running {script} through torchrun (PID {pid}); Ctrl-C ends every rank with "
                           "their captures kept."), file=sys.stderr)
            return
        what = "the notebook " + str(script) + " cell by cell in a fresh kernel" if is_notebook(script) else str(script)
        print(one_line(f"vramlens: running {what} (PID {pid}); `kill -USR1 {os.getpid()}` writes a capture "
                       "without stopping it, Ctrl-C ends it with the capture kept."), file=sys.stderr)
    return on_start


def handle(args: argparse.Namespace) -> int:
    torchrun_options = None
    if args.compare_to and not os.path.exists(args.compare_to):
        print(f"vramlens: --compare-to {one_line(args.compare_to)}: there is no capture there (nothing was run).",
              file=sys.stderr)
        return 2
    if args.torchrun is not None:
        if args.command:
            print("vramlens: put --torchrun last, right before torchrun's options and the script.", file=sys.stderr)
            return 2
        if args.try_alloc_conf or args.confirm:
            print("vramlens: --try-alloc-conf and --confirm are not available with --torchrun yet; run one rank's "
                  "script alone to measure a setting.", file=sys.stderr)
            return 2
        try:
            torchrun_options, script, script_args = split_torchrun_command(args.torchrun)
        except ValueError as error:
            print(f"vramlens: {one_line(error)}.", file=sys.stderr)
            return 2
    else:
        command = split_command(args.command)
        if command is None:
            print("vramlens: give the script to run, e.g. `vramlens run train.py --batch-size 64`.", file=sys.stderr)
            return 2
        script, script_args = command
    limit_bytes = limit_fraction = None
    if args.memory_limit:
        try:
            limit_bytes, limit_fraction = parse_size_or_fraction(args.memory_limit)
        except ValueError as error:
            print(f"vramlens: --memory-limit {one_line(error)}.", file=sys.stderr)
            return 2
    options = RunOptions(
        script=script,
        args=script_args,
        python=args.python,
        capture_dir=args.output,
        stacks=args.stacks,
        max_entries=args.max_entries,
        memory_limit_bytes=limit_bytes,
        memory_limit_fraction=limit_fraction,
        memory_limit_text=args.memory_limit,
        timeout_s=args.timeout,
        sample_interval_s=args.sample_interval,
        source_root=args.source_root,
        census=args.census,
        free_stacks=args.free_stacks,
        on_start=_announce(script, torchrun_options is not None),
    )
    notebook = torchrun_options is None and is_notebook(script)
    if notebook and args.try_alloc_conf:
        print("vramlens: --try-alloc-conf is not available for notebooks yet; set the allocator in the notebook's "
              "environment and run it again to compare.", file=sys.stderr)
        return 2
    if notebook:
        options.cwd = script.resolve().parent  # where Jupyter starts a notebook's kernel
    try:
        if torchrun_options is not None:
            result, trials = run_torchrun(options, torchrun_options), []
        elif notebook:
            result, trials = run_notebook(options), []
        else:
            result, trials = run_with_experiments(options, args.try_alloc_conf)
    except NoCaptureWritten as error:
        print(f"vramlens: {one_line(error)}", file=sys.stderr)
        return error.exit_code
    except CaptureError as error:
        print(f"vramlens: {one_line(error)}", file=sys.stderr)
        return EXIT_NOT_STARTED
    written = "ranks' captures written to" if torchrun_options is not None else "capture written to"
    print(one_line(f"vramlens: {result.status}; {written} {result.capture_dir}"), file=sys.stderr)
    for setting, trial in zip(args.try_alloc_conf, trials):
        print(one_line(f"vramlens: with {setting}: {trial.status}; capture written to {trial.capture_dir}"), file=sys.stderr)
    if args.confirm:
        return _confirm(options, result, args.confirm_repeats)
    if args.compare_to:
        from vramlens.cli import main as cli_main

        source_root = [] if options.source_root is None else ["--source-root", str(options.source_root)]
        cli_main(["diff", args.compare_to, str(result.capture_dir), *source_root])
        return result.exit_code
    if args.analyze:
        from vramlens.cli import main as cli_main

        cli_main(["analyze", str(result.capture_dir)])
    return result.exit_code


def _confirm(options: RunOptions, result, repeats: int) -> int:
    """Analyse the capture, run its confirming experiment, print the verdict and the analysis."""
    from vramlens.analysis import analyze_path
    from vramlens.cli import main as cli_main
    from vramlens.experiments.confirm import confirm
    from vramlens.experiments.store_fix import proven_store_edit

    try:
        analysis = analyze_path(result.capture_dir, source_root=str(options.source_root) if options.source_root else None)
    except CaptureError as error:
        print(f"vramlens: {one_line(error)}", file=sys.stderr)
        return 2
    plan = analysis.diagnosis.confirm
    if plan is None:
        print(one_line(f"vramlens: nothing to confirm: the run ended {analysis.outcome_text} ({analysis.diagnosis.cause})."),
              file=sys.stderr)
        cli_main(["analyze", str(result.capture_dir)])
        return result.exit_code
    print(one_line(f"vramlens: confirming — {plan.question} {plan.expectation}"), file=sys.stderr)
    fix = proven_store_edit(analysis)
    if fix is not None:
        print(one_line(f"vramlens: and measuring the fix at {fix.edit.place}: `{fix.edit.after.strip()}`"), file=sys.stderr)
    options.on_start = None
    try:
        record = confirm(plan, analysis.diagnosis.cause, analysis.diagnosis.alternative, options, result.capture_dir,
                         repeats=repeats, progress=lambda text: print(f"vramlens: {one_line(text)}", file=sys.stderr),
                         fix=fix.edit if fix is not None else None)
    except CaptureError as error:
        print(f"vramlens: the confirming experiment could not run: {one_line(error)}", file=sys.stderr)
        return 2
    print(f"vramlens: {one_line(record['result']['sentence'])}", file=sys.stderr)
    cli_main(["analyze", str(result.capture_dir)])
    return result.exit_code
