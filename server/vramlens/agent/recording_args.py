"""The command-line arguments every recording process takes from the runner (a script's or a notebook's)."""

from __future__ import annotations

import argparse


def recording_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--capture", required=True)
    parser.add_argument("--status-file", required=True)
    parser.add_argument("--run-id", default="")
    parser.add_argument("--stacks", choices=("python", "all"), default="python")
    parser.add_argument("--max-entries", type=int, default=1_000_000)
    parser.add_argument("--memory-limit-bytes", type=int)
    parser.add_argument("--memory-limit-fraction", type=float)
    parser.add_argument("--memory-limit-text")
    parser.add_argument("--source-root")
    parser.add_argument("--free-stacks", action="store_true", help="record a stack for each free too (risky: see vramlens run --help)")
    parser.add_argument("--source-edit", help="JSON {path, line, before, after}: the run reads that line so (an experiment's fix)")
    parser.add_argument("--no-census", dest="census", action="store_false", help="record no tensor census")
    return parser
