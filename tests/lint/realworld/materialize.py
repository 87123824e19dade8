"""Builds the local-only commit corpora's data files (``github/``) from local git clones of their repositories.

    python tests/lint/realworld/materialize.py --clones DIR [--only recall|precision] [--pin]

DIR holds one clone per repository, named ``owner+name`` (bare or not). For every recall case it writes
``github/recall/<case>/before.py`` (the file at ``parent``) and ``after.py`` (at ``commit``); for every codebase
it writes ``github/precision/<name>-<shortsha>.tar.xz``. Each file is checked against the sha256 (cases) or
content digest and counts (codebases) in the manifests; ``--pin`` records them instead, for a case or codebase
just added. The released corpora (``pypi/``) need none of this: their wheels are downloaded by pip.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realworld import recall as rc  # noqa: E402
from realworld.precision import GITHUB_PRECISION, CommitCodebase, content_digest, load_commit_codebases  # noqa: E402
from realworld.sources import MissingSource, git_dir, list_files, read_blob, read_blobs  # noqa: E402


def build_case(case: rc.RecallCase, clones: Path, pin: bool) -> str:
    fix = case.source
    assert isinstance(fix, rc.FixCommit)
    directory = git_dir(clones, fix.repo)
    texts = {"before.py": read_blob(directory, fix.parent, fix.path),
             "after.py": read_blob(directory, fix.commit, fix.path)}
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in texts.items()}
    if pin:
        raw = json.loads((case.folder / "case.json").read_text(encoding="utf-8"))
        raw["sha256"] = digests
        (case.folder / "case.json").write_text(json.dumps(raw, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    elif digests != fix.sha256:
        raise ValueError(f"{case.name}: the files at {fix.parent[:10]}/{fix.commit[:10]} do not match case.json")
    for name, data in texts.items():
        ast.parse(data)  # a case must parse whole
        (case.folder / name).write_bytes(data)
    return f"{case.name}: {fix.repo} {fix.path}"


def _tar_entry(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    archive.addfile(info, io.BytesIO(data))


def build_codebase(codebase: CommitCodebase, clones: Path, pin: bool) -> tuple[str, dict]:
    directory = git_dir(clones, codebase.repo)
    paths = list_files(directory, codebase.commit)
    py = [p for p in paths if codebase.counts(p)]
    blobs = read_blobs(directory, codebase.commit, py + [p for p in codebase.license_files if p in paths])
    sources = {p: blobs[p] for p in py}
    facts = {"files": len(py), "lines": sum(b.count(b"\n") for b in sources.values()),
             "content_sha256": content_digest(sources)}
    if not pin and facts != {k: getattr(codebase, k) for k in facts}:
        raise ValueError(f"{codebase.name}: the files at {codebase.commit[:10]} do not match codebases.json")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz", preset=9) as archive:
        for path in sorted(blobs):
            _tar_entry(archive, f"{codebase.name}/{path}", blobs[path])
    codebase.archive.write_bytes(buffer.getvalue())
    size = codebase.archive.stat().st_size
    return f"{codebase.name}: {facts['files']} files, {facts['lines']} lines, archive {size} bytes", facts


def pin_codebases(facts: dict[str, dict]) -> None:
    manifest = GITHUB_PRECISION / "codebases.json"
    entries = json.loads(manifest.read_text(encoding="utf-8"))
    for entry in entries:
        entry.update(facts.get(entry["name"], {}))
    manifest.write_text(json.dumps(entries, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clones", type=Path, required=True, help="folder with one git clone per repository")
    parser.add_argument("--only", choices=("recall", "precision"))
    parser.add_argument("--pin", action="store_true", help="record hashes and counts instead of checking them")
    args = parser.parse_args(argv)
    missing: list[str] = []
    if args.only != "precision":
        for case in rc.load_cases(rc.GITHUB_RECALL):
            try:
                print(build_case(case, args.clones, args.pin))
            except MissingSource as err:
                missing.append(str(err))
    if args.only != "recall":
        pinned = {}
        for codebase in load_commit_codebases():
            try:
                line, pinned[codebase.name] = build_codebase(codebase, args.clones, args.pin)
                print(line)
            except MissingSource as err:
                missing.append(str(err))
        if args.pin:
            pin_codebases(pinned)
    for message in missing:
        print(f"missing: {message}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
