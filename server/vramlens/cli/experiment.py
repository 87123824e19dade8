"""`vramlens experiment`: measure interventions instead of guessing (argparse adapter only)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vramlens.analysis.comparison import LABELS
from vramlens.analysis.experiment import chosen_sentence
from vramlens.analysis.variants import parse_variant, parse_variants, split_argument_values
from vramlens.capture.errors import CaptureError
from vramlens.cli.run import _positive_float, _positive_int, split_command
from vramlens.runner import RunOptions
from vramlens.runner.controlled import EXPERIMENT_FILE, ExperimentPlan, SearchPlan, run_experiment
from vramlens.units import format_bytes as fmt
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
    print(f"vramlens: {message}", file=sys.stderr)
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
        data = run_experiment(plan, progress=lambda text: print(f"vramlens: {text}", file=sys.stderr))
    except CaptureError as error:
        return _fail(str(error))
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(data))
    print(f"vramlens: runs and {EXPERIMENT_FILE} written to {data['output_dir']}", file=sys.stderr)
    if data["stopped"]:
        print(f"vramlens: {data['stopped']}", file=sys.stderr)
        return 2
    return 0


def _bytes_cell(spread: dict | None) -> str:
    if spread is None:
        return "unknown"
    if spread["n"] == 1 or spread["min"] == spread["max"]:
        return fmt(int(spread["median"]))
    return f"{fmt(int(spread['median']))} ({fmt(int(spread['min']))}–{fmt(int(spread['max']))})"


def _seconds_cell(spread: dict | None) -> str:
    if spread is None:
        return "unknown"
    return f"{spread['median']:.2f} s ({spread['min']:.2f}–{spread['max']:.2f})"


def _share_cell(spread: dict | None) -> str:
    if spread is None:
        return "—"
    return f"{spread['median']:.0%} ({spread['min']:.0%}–{spread['max']:.0%})"


def variant_rows(data: dict) -> list[list[str]]:
    """The table: one row per variant, medians with (min–max) over its runs. Shared with the report."""
    rows = [["variant", "OOM", "peak allocated", "peak reserved", "driver-visible peak", "fragmentation at OOM", "run time"]]
    for variant in data["variants"]:
        summary = variant["summary"]
        rows.append([variant["label"], f"{variant['ooms']}/{len(variant['runs'])}", _bytes_cell(summary["peak_allocated"]),
                     _bytes_cell(summary["peak_reserved"]), _bytes_cell(summary["driver_peak"]),
                     _share_cell(variant["fragmentation_at_oom"]), _seconds_cell(summary["duration_s"])])
    return rows


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def render_text(data: dict) -> str:
    out = [f"VRAM Lens experiment — {data['script']} {' '.join(data['args'])}".rstrip()]
    if data["memory_limit"]:
        out.append(f"Every run capped at {data['memory_limit']}.")
    if data["variants"]:
        out += ["", f"Each variant run {data['repeats']} times; medians with (min–max):", *_table(variant_rows(data))]
        out += ["", "Against the baseline (a difference is real when it exceeds the run-to-run noise):"]
        for variant in data["variants"][1:]:
            out.append(f"  {variant['label']}: {variant['verdict']}")
            out += [f"      {LABELS[d['metric']]}: {d['text']}" for d in variant["differences"][1:] if d["change"] is not None]
    if data["search"]:
        out += ["", *search_lines(data["search"])]
    sentence = chosen_sentence(data)
    out += ["", f"Chosen intervention: {sentence}" if sentence else
            "Chosen intervention: none — no variant beat the baseline beyond the run-to-run noise."]
    if data["stopped"]:
        out += ["", f"Stopped early: {data['stopped']}"]
    return "\n".join(out) + "\n"


def search_lines(search: dict) -> list[str]:
    argument = search["argument"]
    out = [f"Largest {argument} under {search['limit']} (bisection over real runs):"]
    out += [f"  {argument} {probe['value']}: {'fits' if probe['fits'] else 'OOM'}, peak reserved {fmt(probe['peak_reserved'])}"
            for probe in search["probes"]]
    if search["outcome"] == "found":
        out.append(f"  → {search['largest_fit']} fits; {search['smallest_failure']} does not.")
    elif search["outcome"] == "upper_bound_fits":
        out.append(f"  → every value tried fits, up to {search['largest_fit']}: raise --hi to look further.")
    else:
        out.append(f"  → even {argument} {search['lo']} does not fit under {search['limit']}.")
    for metric, fit in (search["fit"] or {}).items():
        if fit is None:
            continue
        quality = f"R² {fit['r_squared']:.4f}" if fit["r_squared"] is not None else "two points: no fit quality"
        predicted = f"; the fit reaches the limit at {fit['predicted_max']}" if fit["predicted_max"] is not None else ""
        out.append(f"  {metric.replace('_', ' ')} ≈ {fmt(int(fit['intercept_bytes']))} + {fmt(int(fit['slope_bytes_per_unit']))} "
                   f"per unit ({quality}, {fit['points']} runs that fit){predicted}")
    return out
