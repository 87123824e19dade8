"""Time `vramlens lint` on a 2,000-line file made of real training/evaluation code (median of runs).

The file is assembled from the lint corpus (cases reduced from public PyTorch projects), repeated
until it reaches the target size. Prints the median time in milliseconds.
"""

from __future__ import annotations

import argparse
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    source = realistic_source(args.lines)
    lint_source(source)  # warm up imports and caches
    timings = []
    for _ in range(args.runs):
        start = time.perf_counter()
        findings = lint_source(source, "bench.py")
        timings.append((time.perf_counter() - start) * 1000)
    print(f"{source.count(chr(10))} lines, {len(findings)} findings: median {statistics.median(timings):.1f} ms "
          f"(min {min(timings):.1f}, max {max(timings):.1f}, {args.runs} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
