"""`vramlens diff BEFORE AFTER`: did the change work? Two captures of one program, compared."""

from __future__ import annotations

import json
import sys

from vramlens.analysis import analyze_capture
from vramlens.analysis.compare.diff import diff_analyses, diff_text, diff_to_json
from vramlens.capture import CaptureError, load_capture
from vramlens.cli.analyze import fail_on, shown_rank_path
from vramlens.safe_text import one_line


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "diff", help="compare two captures: before and after a change",
        description="Compare two captures of the same program (before and after a change): outcome, cause, peak "
        "allocated / reserved / driver-visible, steps completed, growth across steps, and per-line and per-holder changes.",
    )
    parser.add_argument("before", help="the capture before the change (folder, capture.json, or snapshot pickle)")
    parser.add_argument("after", help="the capture after it")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON (docs/analysis-json.md)")
    parser.add_argument("--source-root", metavar="DIR", help="local folder the recorded paths map onto by path suffix")
    parser.set_defaults(handler=run)


def compare_paths(before: str, after: str, source_root: str | None = None):
    """Load and analyse both captures (a folder of ranks' captures: its shown rank) and compare them."""
    sides = []
    for path in (before, after):
        capture = load_capture(shown_rank_path(path, source_root))
        sides.append((analyze_capture(capture, source_root=source_root), capture.meta))
    (first, first_meta), (second, second_meta) = sides
    return diff_analyses(first, second, first_meta, second_meta)


def run(args) -> int:
    try:
        diff = compare_paths(args.before, args.after, args.source_root)
    except (CaptureError, ValueError) as error:
        return fail_on(error)
    if args.json:
        json.dump(diff_to_json(diff), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n".join(map(one_line, diff_text(diff, args.before, args.after).splitlines())) + "\n")
    return 0
