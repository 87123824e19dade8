"""How often does `vramlens lint` fire on real, well-reviewed library code?

Lints every modeling_*.py file of the transformers wheel (source only, no dependencies installed)
and prints line counts, findings by rule, findings per 10,000 lines and every finding's location.

    .venv/bin/python benchmarks/lint_false_positives.py [--version 5.24.0] [--context 2]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from _lint_bench_common import TRANSFORMERS_VERSION, count_lines, lint_json, modeling_files, transformers_src


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=TRANSFORMERS_VERSION)
    parser.add_argument("--context", type=int, default=0, help="source lines to show around each finding")
    args = parser.parse_args()

    root = transformers_src(args.version)
    files = modeling_files(root)
    lines = count_lines(files)
    findings = lint_json(files)

    by_rule = Counter(f["rule"] for f in findings)
    by_severity = Counter(f.get("severity", "?") for f in findings)
    print(f"transformers {args.version}: {len(files)} modeling files, {lines} lines")
    print(f"findings: {len(findings)} ({len(findings) / lines * 10_000:.2f} per 10,000 lines)")
    for rule, n in by_rule.most_common():
        print(f"  {rule:24s} {n:5d}  ({n / lines * 10_000:.2f} per 10,000 lines)")
    print("by severity: " + ", ".join(f"{s} {n}" for s, n in by_severity.most_common()))
    print()
    cache: dict[str, list[str]] = {}
    for f in sorted(findings, key=lambda f: (f["rule"], f["path"], f["line"])):
        rel = Path(f["path"]).resolve().relative_to(root.resolve())
        print(f"{rel}:{f['line']}:{f.get('column', 0)}: {f['rule']} [{f.get('severity', '?')}] {f['message']}")
        if args.context:
            text = cache.setdefault(f["path"], Path(f["path"]).read_text(encoding="utf-8").splitlines())
            lo, hi = max(1, f["line"] - args.context), min(len(text), f["line"] + args.context)
            for n in range(lo, hi + 1):
                print(f"    {'>' if n == f['line'] else ' '}{n:5d} {text[n - 1]}")


if __name__ == "__main__":
    main()
