"""`vramlens lint PATH...`: static checks for memory-wasting PyTorch code (argparse adapter only)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial

from vramlens.lint import CHECKS, fix_file, iter_python_files, lint_file, project_root, unknown_selectors
from vramlens.lint.findings import Finding
from vramlens.safe_text import one_line

_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lint",
        help="find PyTorch code that wastes GPU memory (no GPU needed, nothing is run)",
        description="Static checks for PyTorch code that keeps autograd graphs alive or wastes GPU memory. "
        "Exit status: 0 when clean, 1 when findings remain, 2 on usage errors.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="Python files, notebooks (.ipynb) or folders to check")
    parser.add_argument("--json", action="store_true", help="print findings as JSON (schema in docs/lint.md)")
    parser.add_argument("--fix", action="store_true", help="apply the safe default fix of each finding in place")
    parser.add_argument("--select", default="", metavar="CODES", help="comma-separated rule slugs, codes or code prefixes to report")
    parser.add_argument("--ignore", default="", metavar="CODES", help="comma-separated rule slugs, codes or code prefixes to skip")
    parser.add_argument("--preview", action="store_true",
                        help="also run preview checks (off by default: not measured at 90%% precision on enough real code, "
                        "see docs/lint.md)")
    parser.add_argument("--jobs", type=int, default=0, metavar="N",
                        help="files linted at once, in separate processes (default: one per CPU; 1: in this process)")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the summaries of the project's modules kept between runs "
                        "(in the user's cache folder; see docs/lint.md)")
    parser.add_argument("--list-checks", action="store_true",
                        help="list every check: its rule, severity, whether it is on by default, and why")
    parser.set_defaults(handler=run_lint)


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def run_lint(args: argparse.Namespace) -> int:
    if args.list_checks:
        _print_checks()
        return 0
    if not args.paths:
        print("vramlens lint: give at least one PATH (or --list-checks).", file=sys.stderr)
        return 2
    select, ignore = _split(args.select), _split(args.ignore)
    unknown = unknown_selectors(select + ignore)
    if unknown:
        print(f"vramlens lint: unknown rule or code {', '.join(unknown)}; see docs/lint.md for the list.", file=sys.stderr)
        return 2
    chosen = os.environ.get("VRAMLENS_CACHE_DIR")
    if args.no_cache:
        os.environ["VRAMLENS_CACHE_DIR"] = "off"  # the linting processes inherit it
    try:
        return _lint_paths(args, select, ignore)
    finally:
        if args.no_cache:
            if chosen is None:
                os.environ.pop("VRAMLENS_CACHE_DIR", None)
            else:
                os.environ["VRAMLENS_CACHE_DIR"] = chosen


def _lint_paths(args: argparse.Namespace, select: list[str], ignore: list[str]) -> int:
    files = list(iter_python_files(args.paths))
    # A path that names nothing at all is a usage error; one that names a dangling link, a FIFO or a
    # device is reported as a finding of its own and the other files are checked.
    missing = [str(f) for f in files if not os.path.lexists(f)]
    if missing:
        print(one_line(f"vramlens lint: no such file or folder: {', '.join(missing)}"), file=sys.stderr)
        return 2
    fixed = 0
    findings: list[Finding] = []
    # what a file imports from the others below the root is read too (docs/lint.md, "Other files of the project")
    root = project_root(args.paths)
    if args.fix:
        for path in files:
            result = fix_file(path, select, ignore, args.preview, root)
            if result is not None:
                fixed += result.applied
                findings.extend(result.remaining)  # the lint of the text just written: no need to lint it again
            else:
                findings.extend(lint_file(path, select, ignore, args.preview, root))
    else:
        findings = _lint_all(files, partial(lint_file, select=select, ignore=ignore, preview=args.preview, root=root),
                             args.jobs)
    if args.json:
        print(json.dumps({"findings": [f.to_dict() for f in findings]}, indent=2))
    else:
        _print_text(findings, len(files), fixed if args.fix else None)
    return 1 if any(f.severity in ("error", "warning") for f in findings) else 0


_FILES_PER_JOB = 8  # fewer files than this per process do not repay starting the processes


def _lint_all(files: list, lint, jobs: int) -> list[Finding]:
    """Every file's findings, in the files' order: linted in ``jobs`` processes when there are enough files
    (each file is linted alone, so the result is the same), else here. A pool that cannot start or loses a
    process leaves the files to this process."""
    jobs = jobs or (os.cpu_count() or 1)
    jobs = min(jobs, len(files) // _FILES_PER_JOB, 16)
    if jobs > 1:
        try:
            # The largest files first, one at a time: the processes finish together instead of one waiting
            # for the other's last large file.
            order = sorted(range(len(files)), key=lambda i: -_size(files[i]))
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                found = dict(zip(order, pool.map(lint, [files[i] for i in order])))
            return [f for i in range(len(files)) for f in found[i]]
        except (BrokenProcessPool, OSError):
            pass
    return [f for path in files for f in lint(path)]


def _size(path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # linted anyway: the lint says why it cannot be read


def _print_checks() -> None:
    """One line per check: code, rule, severity, default status and the evidence behind it."""
    for c in CHECKS:
        status = "preview" if c.preview else "on"
        print(f"{c.code}  {c.rule:22} {c.severity:8} {status:8} {c.summary}; {c.reason.split(': ', 1)[-1]}"
              + ("" if c.code == "VL000" else f"; {c.held_out_text}"))


def _print_text(findings: list[Finding], file_count: int, fixed: int | None) -> None:
    for finding in findings:
        # A file's name or a message quoting its code cannot break the line nor reach the terminal as control.
        where = f"cell {finding.cell}:" if finding.cell is not None else ""
        print(one_line(f"{finding.path}:{where}{finding.line}:{finding.column + 1}: {finding.code} [{finding.rule}] "
                       f"{finding.severity}: {finding.message}"))
        if finding.fixes and fixed is None:
            print(one_line(f"    fix available: {finding.fixes[0].title} (run with --fix)"))
    counts = {}
    for finding in findings:
        counts[finding.severity] = counts.get(finding.severity, 0) + 1
    summary = ", ".join(f"{counts[s]} {s}{'s' if counts[s] != 1 else ''}" for s in sorted(counts, key=_SEVERITY_ORDER.get))
    checked = f"{file_count} file{'s' if file_count != 1 else ''} checked"
    applied = f", {fixed} fix{'es' if fixed != 1 else ''} applied" if fixed is not None else ""
    print(f"{checked}{applied}: {summary or 'no findings'}.", file=sys.stderr if findings else sys.stdout)
