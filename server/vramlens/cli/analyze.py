"""`vramlens analyze PATH`: why the GPU ran out of memory, in text or --json (the words: analysis/rendering/)."""

from __future__ import annotations

import json
import sys

from vramlens.analysis import analyze_path, to_json
from vramlens.analysis.rendering.analysis_text import TOP_LINES, render_text
from vramlens.capture.ranks import holds_rank_captures
from vramlens.cli.store_diff import store_diff
from vramlens.analysis.model import Analysis
from vramlens.units import parse_size
from vramlens.capture import CaptureError, memory_ceiling
from vramlens.safe_text import one_line, printable


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "analyze", help="diagnose a capture folder or a raw snapshot pickle",
        description="Explain where the GPU memory went: accounting, cause, lines responsible, what to try.",
    )
    add_capture_options(parser)
    parser.add_argument("--json", action="store_true", help="print the documented JSON schema instead of text")
    parser.add_argument("--top", type=int, default=TOP_LINES, help=f"how many lines to show (default {TOP_LINES})")
    parser.add_argument("--verbose", action="store_true",
                        help="add the timeline, the steps, the census (what the memory is, who holds it) and call paths")
    parser.set_defaults(handler=run)


def add_capture_options(parser) -> None:
    """PATH, --total-memory and --source-root: how analyze and report find and read a capture."""
    parser.add_argument("path", help="capture folder, its capture.json, a folder of ranks' captures "
                        "(vramlens run --torchrun), or a torch.cuda.memory._dump_snapshot pickle")
    parser.add_argument("--total-memory", metavar="SIZE", help="device memory when the snapshot cannot say (e.g. 24GiB, 141e9)")
    parser.add_argument("--source-root", metavar="DIR", help="local folder the recorded paths map onto by path suffix")
    parser.add_argument("--load-memory", metavar="SIZE|unlimited",
                        help="the memory loading a snapshot may take (default 26x its size + 8 MiB, a bound against "
                        "hostile files); raise it for a large snapshot you trust (also VRAMLENS_LOAD_MEMORY)")


def choose_load_memory(args) -> None:
    """--load-memory, for every load this command makes; ValueError (one sentence) when unreadable."""
    text = getattr(args, "load_memory", None)
    if text is None:
        return
    try:
        memory_ceiling.choose(text)
    except ValueError as error:
        raise ValueError(f"--load-memory {error}") from None


def load_analysis(args) -> Analysis:
    """Shared by analyze and report: parse the options and analyze, raising CaptureError/ValueError for the user."""
    total = parse_size(args.total_memory) if getattr(args, "total_memory", None) else None
    return analyze_path(args.path, total_memory=total, source_root=getattr(args, "source_root", None))


def fail(message: str, details: str | None = None) -> int:
    """One sentence for the user; ``details`` (the script's own traceback) follows it when there is one."""
    print(f"vramlens: {one_line(message)}", file=sys.stderr)
    if details:
        print("\n" + printable(details.rstrip()), file=sys.stderr)
    return 2


def fail_on(error: Exception) -> int:
    return fail(str(error), getattr(error, "details", None))


def _which(comparison, shown) -> str:
    return "the failing rank" if shown.rank == comparison.failing_rank else "the rank that used most memory"


def shown_rank_path(path: str, source_root: str | None) -> str:
    """For a folder of ranks, the capture of the rank to show (saying so on stderr); else ``path``."""
    if not holds_rank_captures(path):
        return path
    from vramlens.analysis.ranks.analyze import analyze_ranks  # only for a folder of ranks (start-up time)

    comparison = analyze_ranks(path, source_root=source_root)
    shown = comparison.ranks[comparison.default_index]
    print(one_line(f"vramlens: {path} holds {len(comparison.ranks)} ranks' captures; this is rank {shown.rank} "
                   f"({_which(comparison, shown)}); `vramlens analyze {path}` compares them all."), file=sys.stderr)
    return shown.capture


def run_ranks(args) -> int:
    """A folder of ranks' captures: the comparison, then the failing (or fullest) rank in full."""
    # Imported here, as only a folder of ranks needs them: they cost every other analysis its start-up.
    from vramlens.analysis.ranks.analyze import analyze_ranks
    from vramlens.analysis.rendering.rank_export import comparison_to_json
    from vramlens.analysis.rendering.ranks_text import render_ranks_text

    try:
        comparison = analyze_ranks(args.path, source_root=args.source_root)
    except CaptureError as error:
        return fail_on(error)
    if all(summary.analysis is None for summary in comparison.ranks):
        problems = "; ".join(f"rank {summary.rank}: {summary.problem}" for summary in comparison.ranks)
        return fail(f"No rank's capture could be analyzed ({problems})")
    if args.json:
        json.dump(comparison_to_json(comparison), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    shown = comparison.ranks[comparison.default_index]
    sys.stdout.write(render_ranks_text(comparison, args.path))
    sys.stdout.write(f"\n── Rank {shown.rank} ({_which(comparison, shown)}) ──\n")
    sys.stdout.write(render_text(shown.analysis, shown.capture, args.top, args.verbose, store_diff(shown.analysis)))
    return 0


def run(args) -> int:
    try:
        choose_load_memory(args)
    except ValueError as error:
        return fail_on(error)
    if holds_rank_captures(args.path):
        return run_ranks(args)
    try:
        analysis = load_analysis(args)
    except (CaptureError, ValueError) as error:
        return fail_on(error)
    if args.json:
        json.dump(to_json(analysis), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(analysis, args.path, args.top, args.verbose, store_diff(analysis)))
    return 0
