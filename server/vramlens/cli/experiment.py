"""`vramlens experiment`: measure interventions instead of guessing (argparse adapter only)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vramlens.analysis.rendering.experiment_text import render_text
from vramlens.analysis.experiments.variants import parse_variant, parse_variants, split_argument_values
from vramlens.capture.errors import CaptureError
from vramlens.cli.run import _positive_float, _positive_int, split_command
from vramlens.runner import RunOptions
from vramlens.experiments.engine import EXPERIMENT_FILE, ExperimentPlan, SearchPlan, run_experiment
from vramlens.safe_text import one_line
from vramlens.units import parse_size_or_fraction

DEFAULT_REPEATS = 3
DEFAULT_MAX_ENTRIES = 20_000  # experiments compare totals; a short history keeps each run's capture quick


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "experiment",
        usage="vramlens experiment [options] SCRIPT [ARGS ...]",
        help="compare allocator settings, memory limits or argument values over repeated runs",
        description="Run SCRIPT as given (the baseline) and once per variant, each REPEATS times in a fresh "
        "process with everything else equal; show medians with their spread and which differences exceed "
        "the run-to-run noise. With --find-max: the largest value of an argument that fits under --limit. "
        "See docs/experiments.md.",
    )
    parser.add_argument("--variant", action="append", default=[], metavar="SETTING",
                        help="an allocator setting to try, e.g. expandable_segments:True; repeatable")
    parser.add_argument("--memory-limit-variant", action="append", default=[], metavar="SIZE",
                        help="a smaller emulated card to try, e.g. 24GiB; repeatable")
    parser.add_argument("--arg-values", action="append", default=[], metavar="ARG=V1,V2,...",
                        help="values of a script argument to try, e.g. batch-size=8,16,32 (or --arg-values=--batch-size=8,16); repeatable")
    parser.add_argument("--repeats", metavar="N", type=_positive_int, default=DEFAULT_REPEATS,
                        help=f"runs per variant (default {DEFAULT_REPEATS})")
    parser.add_argument("--memory-limit", metavar="SIZE|FRACTION", help="cap every run (the common ground), e.g. 24GiB")
    parser.add_argument("--find-max", metavar="ARG", help="search the largest value of this numeric script argument that fits under --limit")
    parser.add_argument("--limit", metavar="SIZE", help="the memory limit of --find-max, e.g. 24GiB")
    parser.add_argument("--lo", metavar="N", type=_positive_int, default=1, help="smallest value --find-max tries (default 1)")
    parser.add_argument("--hi", metavar="N", type=_positive_int, help="largest value --find-max tries (default: doubles from --lo until a run fails)")
    parser.add_argument("--step", metavar="N", type=_positive_int, default=1, help="--find-max tries lo, lo+step, … only (default 1)")
    parser.add_argument("--python", metavar="PY", default=sys.executable, help="interpreter that has torch (default: this one)")
    parser.add_argument("-o", "--output", metavar="DIR", type=Path, help="folder for the runs' captures (default: .vramlens/experiments/SCRIPT-TIME)")
    parser.add_argument("--timeout", type=_positive_float, metavar="SECONDS", help="end any one run after this long")
    parser.add_argument("--max-entries", metavar="N", type=_positive_int, default=DEFAULT_MAX_ENTRIES,
                        help=f"allocator history kept per run (default {DEFAULT_MAX_ENTRIES})")
    parser.add_argument("--json", action="store_true", help="print the JSON of docs/experiments.md instead of text")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS ...]",
                        help="the script, then the arguments passed to it unchanged")
    parser.set_defaults(handler=handle)


def _fail(message: str) -> int:
    print(f"vramlens: {one_line(message)}", file=sys.stderr)
    return 2


def build_plan(args: argparse.Namespace) -> ExperimentPlan:
    """The options → a plan; ValueError with one sentence when they do not make one."""
    command = split_command(args.command)
    if command is None:
        raise ValueError("give the script to run, e.g. `vramlens experiment --variant expandable_segments:True train.py`")
    script, script_args = command
    specs = list(args.variant) + [f"memory-limit={size}" for size in args.memory_limit_variant]
    specs += [f"--{spec.lstrip('-')}" for spec in args.arg_values]
    for spec in args.variant:
        if parse_variant(spec)[0].kind != "allocator":
            raise ValueError(f"--variant {spec}: not an allocator setting; use --memory-limit-variant or --arg-values")
    for size in [args.memory_limit, *args.memory_limit_variant, args.limit]:
        if size:
            parse_size_or_fraction(size)
    search = None
    if args.find_max or args.limit:
        if not (args.find_max and args.limit):
            raise ValueError("--find-max ARG and --limit SIZE go together")
        if args.hi is not None and args.hi <= args.lo:
            raise ValueError(f"--hi {args.hi} must be larger than --lo {args.lo}")
        argument, _ = split_argument_values(f"{args.find_max}=1")
        search = SearchPlan(argument, args.limit, args.lo, args.hi, args.step)
    variants = parse_variants(specs)
    if search and len(variants) == 1:
        variants = []  # a search alone: a baseline with nothing to compare it with is not run
    elif len(variants) == 1:
        raise ValueError("give at least one variant (--variant, --memory-limit-variant, --arg-values) or --find-max")
    options = RunOptions(script=script, python=args.python, max_entries=args.max_entries, timeout_s=args.timeout)
    return ExperimentPlan(script, script_args, variants, args.repeats, args.memory_limit, search, options, args.output)


def handle(args: argparse.Namespace) -> int:
    try:
        plan = build_plan(args)
    except ValueError as error:
        return _fail(f"{error}.".replace("..", "."))
    try:
        data = run_experiment(plan, progress=lambda text: print(f"vramlens: {one_line(text)}", file=sys.stderr))
    except CaptureError as error:
        return _fail(str(error))
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(data))
    print(one_line(f"vramlens: runs and {EXPERIMENT_FILE} written to {data['output_dir']}"), file=sys.stderr)
    if data["stopped"]:
        print(f"vramlens: {one_line(data['stopped'])}", file=sys.stderr)
        return 2
    return 0
