"""Pins the released corpora's archives: records each one's file name and sha256, and each codebase's counts.

    python tests/lint/realworld/pin.py [--check]

A codebase in ``pypi/precision/codebases.json`` or a case in ``pypi/recall/*/case.json`` is added with its
package and version (a case: ``buggy`` and ``fixed``, each with ``version`` and ``path``) and no ``file``; this
script asks pip for that release's wheel (any platform's, when ``file`` names one to match; its sdist when it
has no wheel, or when ``file`` names an sdist), writes ``file`` and ``sha256``, and for a codebase the number of
counted files and lines. Pinned entries are left as they are; ``--check`` downloads every pinned archive
through the cache and checks the counts and paths instead.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realworld import recall as rc  # noqa: E402
from realworld.archives import Archive, cache_dir, fetch, python_members, sha256_of  # noqa: E402
from realworld.precision import PYPI_PRECISION, ReleasedCodebase, load_released_codebases  # noqa: E402


def download_release(package: str, version: str, like: str = "") -> Path:
    """The wheel pip picks for this interpreter (or the file matching the name ``like``), else the sdist, saved
    into the cache under its own name."""
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    targets = [Archive(package, version, like, "0" * 64).target_args()] if like else [
        ["--only-binary", ":all:"], ["--no-binary", ":all:"]]
    for target in targets:
        with tempfile.TemporaryDirectory(dir=cache, prefix=".pin-") as tmp:
            done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", *target,
                                   "--disable-pip-version-check", "-d", tmp, f"{package}=={version}"])
            saved = list(Path(tmp).iterdir())
            if done.returncode == 0 and len(saved) == 1:
                return saved[0].replace(cache / saved[0].name)
    raise SystemExit(f"pip found no archive of {package}=={version}")


def pin_release(entry: dict, package: str) -> bool:
    if entry.get("sha256"):
        return False
    archive = download_release(package, entry["version"], entry.get("file", ""))
    entry["file"], entry["sha256"] = archive.name, sha256_of(archive)
    return True


def pin_codebases() -> None:
    manifest = PYPI_PRECISION / "codebases.json"
    entries = json.loads(manifest.read_text(encoding="utf-8"))
    for entry in entries:
        if pin_release(entry, entry["package"]) or not entry.get("files"):
            codebase = ReleasedCodebase(**entry)
            files = {p: d for p, d in python_members(fetch(codebase.archive)).items() if codebase.counts(p)}
            entry["files"], entry["lines"] = len(files), sum(d.count(b"\n") for d in files.values())
            print(f"{entry['name']}: {entry['file']} {entry['files']} files, {entry['lines']} lines")
    manifest.write_text(json.dumps(entries, indent=2) + "\n", encoding="utf-8")


def pin_cases() -> None:
    for folder in sorted(rc.PYPI_RECALL.iterdir()):
        manifest = folder / "case.json"
        if not manifest.is_file():
            continue
        data = json.loads(manifest.read_text(encoding="utf-8"))
        changed = [pin_release(data[which], data["package"]) for which in ("buggy", "fixed")]
        if any(changed):
            manifest.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"{folder.name}: {data['buggy']['file']} -> {data['fixed']['file']}")


def check() -> int:
    problems = []
    for codebase in load_released_codebases():
        try:
            codebase.sources()
        except ValueError as err:
            problems.append(str(err))
    for case in rc.load_cases(rc.PYPI_RECALL):
        for released in (case.source.buggy, case.source.fixed):
            try:
                released.text()
            except Exception as err:  # noqa: BLE001 - every problem is reported, not the first only
                problems.append(f"{case.name}: {err}")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="check every pinned archive instead of pinning")
    args = parser.parse_args(argv)
    if args.check:
        return check()
    pin_codebases()
    pin_cases()
    return 0


if __name__ == "__main__":
    sys.exit(main())
