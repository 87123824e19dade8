"""`vramlens report PATH [--redact] [-o FILE]`: a Markdown report to attach to an issue."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from vramlens.analysis.pipeline import analyze_capture
from vramlens.capture import load_capture
from vramlens.analysis.rendering.redact import hosts_of, redact_counted
from vramlens.analysis.rendering.report import build_report
from vramlens.analysis.rendering.report_paths import report_roots
from vramlens.analysis.rendering.timeline_svg import timeline_svg
from vramlens.units import parse_size
from vramlens.capture import CaptureError
from vramlens.cli.analyze import add_capture_options, choose_load_memory, fail, fail_on, shown_rank_path
from vramlens.safe_text import one_line, printable


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "report", help="write a reproducibility report in Markdown",
        description="A Markdown report (setup, failure, accounting, diagnosis, lines, timeline plot) for sharing.",
    )
    add_capture_options(parser)
    parser.add_argument("-o", "--output", metavar="FILE", help="write here (the plot goes beside it as FILE-timeline.svg)")
    parser.add_argument("--redact", action="store_true", help="hide paths outside the source root, the home folder and user names")
    parser.set_defaults(handler=run)


def run(args) -> int:
    try:
        choose_load_memory(args)
        total = parse_size(args.total_memory) if args.total_memory else None
        capture = load_capture(shown_rank_path(args.path, args.source_root))
        analysis = analyze_capture(capture, total_memory=total, source_root=args.source_root)
    except (CaptureError, ValueError) as error:
        return fail_on(error)
    meta = capture.meta
    title = os.path.basename(meta.get("script") or str(args.path).rstrip("/"))
    svg_name = None
    if args.output:
        output = Path(args.output)
        svg_path = output.with_name(output.stem + "-timeline.svg")
        svg_name = svg_path.name
    text = build_report(analysis, meta, svg_name, title)
    summary = None
    if args.redact:
        redaction = redact_counted(text, list(report_roots(analysis, meta).every), hosts_of(meta))
        summary = redaction.summary()
        text = f"{redaction.text}\n> {summary}\n"
    text = printable(text)
    if not args.output:
        sys.stdout.write(text)
        if summary:
            print(f"vramlens: {summary}", file=sys.stderr)
        return 0
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        svg_path.write_text(timeline_svg(analysis.timeline, analysis.accounting.limit), encoding="utf-8")
    except OSError as error:
        return fail(f"cannot write the report to {output}: {error.strerror}.")
    print(f"Report written to {one_line(output)} (timeline plot: {one_line(svg_path.name)})."
          + (f" {summary}" if summary else ""))
    return 0
