"""Turn what record.sh wrote into fixtures: tests/fixtures/realworld/<workload>/ and their README.

    python3 workloads/unpack.py OUT [--dest tests/fixtures/realworld]
    python3 workloads/unpack.py OUT --compressed --dest tests/fixtures/realworld/round4
    python3 workloads/unpack.py tests/fixtures/realworld/round4 --extract --dest /tmp/round4   # to read them

With --compressed the workloads stay as their <workload>.tar.xz (the tree that travels to the GPU
machine and the repository stay small); ``extract_compressed`` unpacks such a folder for tests and
benchmarks.

OUT holds captures-N.tar (members <workload>.tar.xz), summary.json and log.txt. Each workload's
folder gets exactly what was recorded: capture/ (as `vramlens run` wrote it), experiment.json (the
confirming runs), ground_truth.json and run.log (the script's output, its last lines). README.md
is generated from those files; nothing in it is typed by hand.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import sys
import tarfile
from pathlib import Path

GIB = 2**30
HERE = Path(__file__).resolve().parent


def unpack(out: Path, dest: Path) -> list[str]:
    names = []
    for archive in sorted(out.glob("captures-*.tar")):
        with tarfile.open(archive) as outer:
            for member in outer.getmembers():
                if not member.name.endswith(".tar.xz") or "/" in member.name:
                    continue
                name = member.name[: -len(".tar.xz")]
                with tarfile.open(fileobj=io.BytesIO(outer.extractfile(member).read()), mode="r:xz") as inner:
                    _check_members(inner, name)
                    if (dest / name).exists():
                        shutil.rmtree(dest / name)
                    inner.extractall(dest, filter="data") if sys.version_info >= (3, 12) else inner.extractall(dest)
                names.append(name)
    return names


def keep_compressed(out: Path, dest: Path) -> list[str]:
    """Each workload's <workload>.tar.xz copied into dest, as recorded (its members checked first)."""
    names = []
    for archive in sorted(out.glob("captures-*.tar")):
        with tarfile.open(archive) as outer:
            for member in outer.getmembers():
                if not member.name.endswith(".tar.xz") or "/" in member.name:
                    continue
                name = member.name[: -len(".tar.xz")]
                data = outer.extractfile(member).read()
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as inner:
                    _check_members(inner, name)
                (dest / member.name).write_bytes(data)
                names.append(name)
    return names


def extract_compressed(folder: Path, into: Path) -> list[Path]:
    """The workloads of a --compressed folder, unpacked under ``into``: their folders."""
    found = []
    for archive in sorted(folder.glob("*.tar.xz")):
        name = archive.name[: -len(".tar.xz")]
        with tarfile.open(archive, mode="r:xz") as inner:
            _check_members(inner, name)
            inner.extractall(into, filter="data") if sys.version_info >= (3, 12) else inner.extractall(into)
        found.append(into / name)
    return found


def _check_members(archive: tarfile.TarFile, name: str) -> None:
    for member in archive.getmembers():
        if not (member.name == name or member.name.startswith(name + "/")) or ".." in member.name.split("/"):
            raise SystemExit(f"unpack: {member.name!r} is outside {name}/; refusing this archive.")
        if not (member.isfile() or member.isdir()):
            raise SystemExit(f"unpack: {member.name!r} is not a file or folder; refusing this archive.")


def _gib(value) -> str:
    return "—" if value is None else f"{value / GIB:.2f} GiB"


def _outcome(measured: dict) -> str:
    if measured.get("oom"):
        return (f"OOM after {measured.get('steps_completed', 0)} step(s), asking {_gib(measured.get('oom_request'))} "
                f"with {_gib(measured.get('allocated_at_oom'))} allocated, {_gib(measured.get('reserved_at_oom'))} reserved")
    return (f"{measured.get('status')}; at the end {_gib(measured.get('end_allocated'))} allocated, "
            f"{_gib(measured.get('end_reserved'))} reserved")


def _confirming(record: dict) -> str:
    runs = [run for run in record.get("confirming_runs", []) if run["outcome"] != "not_run"]
    if not runs:
        return "—"
    words = {"completed": "fits", "oom": "OOM"}
    return "; ".join(f"{run['change'].split(' (')[0]}: {words.get(run['outcome'], run['outcome'])}" for run in runs)


def readme(dest: Path, summary: dict) -> str:
    records = []
    for folder in sorted(path for path in dest.iterdir() if (path / "ground_truth.json").is_file()):
        records.append(json.loads((folder / "ground_truth.json").read_text()))
    machine = _machine(dest, records)
    lines = [
        "# Real workloads recorded on a GPU",
        "",
        f"Recorded by `bash workloads/record.sh OUT` on {machine}, then unpacked with `python3 workloads/unpack.py OUT`.",
        "Every folder is what the run wrote: `capture/` exactly as `vramlens run` wrote it, `experiment.json` the",
        "confirming runs (`vramlens experiment --repeats 1` under the same cap: expandable_segments, the batch or size",
        "halved, the steps halved, the fix; for torchrun launches one `vramlens run --torchrun` per variant),",
        "`ground_truth.json` the cause measured by the rule in workloads/README.md, and `run.log` the script's output.",
        "Workloads ran from neutral folders (`/workspace/<folder>/`), so frames name `/workspace/...`.",
        "Nothing here was edited by hand; this file is generated by workloads/unpack.py.",
        "",
        "| workload | library | how it was run | measured outcome | confirming runs | measured cause | built to show |",
        "|---|---|---|---|---|---|---|",
    ]
    for record in records:
        cause = record["cause"] or f"none ({record.get('detail')})"
        if record.get("detail") and record["cause"]:
            cause += f" ({record['detail']})"
        intent = record["intent"] + ("" if record["agrees_with_intent"] else " — the measurement wins")
        run = f"`{re.sub(r'^vramlens run --max-entries [0-9]+ ', '', record['recorded']['command'])}`"
        split = f" (held-out round {record['round']})" if record.get("held_out") and record.get("round", 1) > 1 else ""
        lines.append(f"| `{record['workload']}`{split} | {record['library']} | {run} | {_outcome(record['measured'])} | "
                     f"{_confirming(record)} | **{cause}** [{record['rule']}] | {intent} |")
    skipped = summary.get("skipped") or []
    if skipped:
        lines += ["", "Not run for lack of time on the recording machine: " + ", ".join(skipped) + "."]
    lines += ["", "What each workload does:", ""]
    lines += [f"- `{record['workload']}`: {record['story']}" for record in records]
    lines += ["", "Caps were calibrated on the machine before recording (ground_truth.json, `calibration`):"]
    lines += [f"- `{record['workload']}`: " + ("; ".join(record["calibration"]["notes"]) or "no cap")
              for record in records if record["calibration"]["of"] == record["workload"] and record["calibration"]["notes"]]
    return "\n".join(lines) + "\n"


def _machine(dest: Path, records: list[dict]) -> str:
    for record in records:
        capture = dest / record["workload"] / "capture"
        for meta_path in (capture / "capture.json", capture / "rank-0" / "capture.json"):
            if meta_path.is_file():
                meta = json.loads(meta_path.read_text())
                environment = meta.get("environment") or {}
                if environment.get("gpu_name"):
                    return (f"one {environment['gpu_name']} ({_gib(environment.get('total_memory'))}, driver "
                            f"{environment.get('driver')}), torch {environment.get('torch')}, Python "
                            f"{(meta.get('python') or {}).get('version')} ({meta.get('started_at', '')[:10]})")
    return "the GPU machine"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--dest", type=Path, default=HERE.parent / "tests" / "fixtures" / "realworld")
    parser.add_argument("--compressed", action="store_true", help="keep each workload as its .tar.xz in DEST")
    parser.add_argument("--extract", action="store_true", help="OUT is a --compressed folder: unpack it into DEST")
    options = parser.parse_args(argv)
    options.dest.mkdir(parents=True, exist_ok=True)
    if options.extract:
        folders = extract_compressed(options.out, options.dest)
        print(f"extracted {len(folders)} workloads into {options.dest}")
        return 0
    summary_path = options.out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    if options.compressed:
        import tempfile
        names = keep_compressed(options.out, options.dest)
        with tempfile.TemporaryDirectory() as scratch:
            extract_compressed(options.dest, Path(scratch))
            (options.dest / "README.md").write_text(readme(Path(scratch), summary))
    else:
        names = unpack(options.out, options.dest)
        (options.dest / "README.md").write_text(readme(options.dest, summary))
    print(f"unpacked {len(names)} workloads into {options.dest}: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
