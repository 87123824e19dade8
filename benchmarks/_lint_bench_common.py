"""Shared helpers for the lint benchmarks: fetch the transformers wheel, find files, run `vramlens lint`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
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
