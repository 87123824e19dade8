"""How often does `vramlens lint` fire on real, well-reviewed library code?

Lints every modeling_*.py file of the transformers wheel (source only, no dependencies installed)
and prints line counts, findings by rule, findings per 10,000 lines and every finding's location.

    .venv/bin/python benchmarks/lint_false_positives.py [--version 5.24.0] [--context 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

WORK = Path(os.environ.get("VRAMLENS_BENCH_DIR", "/tmp/vramlens-lint-bench"))
TRANSFORMERS_VERSION = os.environ.get("TRANSFORMERS_VERSION", "5.24.0")


def vramlens_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("vramlens")
    return [str(exe)] if exe.exists() else [shutil.which("vramlens") or "vramlens"]


def transformers_src(version: str = TRANSFORMERS_VERSION) -> Path:
    """Download the wheel (no deps) with a throwaway venv under WORK and unzip it; return its source folder."""
    dest = WORK / f"transformers-{version}"
    if (dest / "transformers").is_dir():
        return dest
    venv = WORK / "venv"
    if not (venv / "bin" / "pip").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    wheels = WORK / "wheels"
    subprocess.run([str(venv / "bin" / "pip"), "download", "-q", "--no-deps", "-d", str(wheels),
                    f"transformers=={version}"], check=True)
    wheel = next(wheels.glob(f"transformers-{version}-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(dest)
    return dest


def modeling_files(root: Path) -> list[Path]:
    return sorted(root.rglob("modeling_*.py"))


def count_lines(paths: list[Path]) -> int:
    return sum(p.read_bytes().count(b"\n") for p in paths)


def parse_findings(stdout: str) -> list[dict]:
    data = json.loads(stdout) if stdout.strip() else []
    if isinstance(data, dict):
        data = data.get("findings", [])
    return data


def lint_json(paths: list[Path], chunk: int = 200) -> list[dict]:
    findings: list[dict] = []
    for i in range(0, len(paths), chunk):
        part = [str(p) for p in paths[i:i + chunk]]
        proc = subprocess.run(vramlens_cmd() + ["lint", "--json", *part], capture_output=True, text=True)
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"vramlens lint exited {proc.returncode}: {proc.stderr[-2000:]}")
        findings += parse_findings(proc.stdout)
    return findings



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
