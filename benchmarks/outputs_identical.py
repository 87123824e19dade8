"""Whether two checkouts print the same `vramlens analyze` for every fixture capture, byte for byte.

    python benchmarks/outputs_identical.py --baseline-server DIR [--modes text,json,verbose]

For each capture folder under tests/fixtures (and those packed in tests/fixtures/**/*.tar.xz, unpacked
into a temporary folder as the tests unpack them), runs `python -m vramlens analyze FOLDER` (plain,
--json and --verbose) once with this checkout's server/ and once with DIR (another checkout's server/),
and compares standard output, standard error and the exit status. Prints each difference and a count;
exits 1 when any output differs. A change meant to make the analysis faster must leave this at 0.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
MODES = {"text": [], "json": ["--json"], "verbose": ["--verbose"]}


def capture_folders(root: Path) -> list[Path]:
    return sorted(path.parent for path in root.rglob("capture.json"))


def run(server: Path, folder: Path, options: list[str]) -> tuple[int, bytes, bytes]:
    env = dict(os.environ, PYTHONPATH=str(server))
    done = subprocess.run([sys.executable, "-m", "vramlens", "analyze", str(folder), *options],
                          capture_output=True, env=env, timeout=600, cwd=REPO)
    return done.returncode, done.stdout, done.stderr


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline-server", required=True, metavar="DIR", help="the server/ folder of the other checkout")
    parser.add_argument("--modes", default="text,json,verbose", help="which outputs to compare (text, json, verbose)")
    args = parser.parse_args()
    modes = [mode for mode in args.modes.split(",") if mode]
    ours, theirs = REPO / "server", Path(args.baseline_server).resolve()
    with tempfile.TemporaryDirectory(prefix="vramlens-outputs-") as unpacked:
        for bundle in sorted(FIXTURES.rglob("*.tar.xz")):
            with tarfile.open(bundle) as archive:
                archive.extractall(Path(unpacked) / bundle.name.removesuffix(".tar.xz"), filter="data")
        folders = capture_folders(FIXTURES) + capture_folders(Path(unpacked))
        compared = differing = 0
        for folder in folders:
            for mode in modes:
                compared += 1
                if run(ours, folder, MODES[mode]) != run(theirs, folder, MODES[mode]):
                    differing += 1
                    name = folder.relative_to(unpacked) if str(folder).startswith(unpacked) else folder.relative_to(REPO)
                    print(f"differs: {name} ({mode})")
    print(f"{len(folders)} capture folders, {compared} outputs compared, {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
