"""Time `vramlens lint` on a 2,000-line file made of real training/evaluation code.

The file is assembled from the lint corpus (cases reduced from public PyTorch projects), repeated
until it reaches the target size. Times are CPU time of this process (time.process_time), which a
shared machine disturbs less than wall time. Each run lints the file and, right after, parses it
with a bare ``ast.parse``, so both see the same load; prints median and min of each and the median
ratio lint / parse.

    .venv/bin/python benchmarks/lint_speed.py [--lines 2000] [--runs 41] [--file PATH]
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
from pathlib import Path

from vramlens.lint import lint_source

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "lint" / "corpus"


def realistic_source(target_lines: int) -> str:
    pieces = [p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*/*.py"))]
    if not pieces:
        raise SystemExit("no corpus files found under tests/lint/corpus")
    lines: list[str] = []
    round_number = 0
    while len(lines) < target_lines:
        for index, piece in enumerate(pieces):
            if len(lines) >= target_lines:
                break
            # Rename top-level definitions per copy so the file reads like one big module.
            lines.extend(piece.replace("def ", f"def r{round_number}_{index}_").replace("class ", f"class R{round_number}_{index}_").splitlines())
            lines.append("")
        round_number += 1
    return "\n".join(lines) + "\n"  # whole files only, so the result still parses


def _cpu_ms(fn) -> float:
    start = time.process_time()
    fn()
    return (time.process_time() - start) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=41)
    parser.add_argument("--file", help="time this file instead of the assembled one")
    args = parser.parse_args()
    source = Path(args.file).read_text(encoding="utf-8") if args.file else realistic_source(args.lines)
    findings = lint_source(source, "bench.py")  # warm up imports and caches
    lint_times, parse_times, ratios = [], [], []
    for _ in range(args.runs):
        lint_ms = _cpu_ms(lambda: lint_source(source, "bench.py"))
        parse_ms = _cpu_ms(lambda: ast.parse(source))
        lint_times.append(lint_ms)
        parse_times.append(parse_ms)
        ratios.append(lint_ms / parse_ms if parse_ms else float("nan"))
    print(f"{source.count(chr(10))} lines, {len(findings)} findings, CPU time over {args.runs} runs: "
          f"lint median {statistics.median(lint_times):.1f} ms (min {min(lint_times):.1f}); "
          f"ast.parse median {statistics.median(parse_times):.1f} ms (min {min(parse_times):.1f}); "
          f"lint/parse median {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
