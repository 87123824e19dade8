"""Published archives pinned by file name and sha256, downloaded once with pip into a cache folder and read in place.

A wheel is a zip of the package's files as released, and pip fetches it by name and version without running
anything from it; it is preferred. Releases published only as an sdist are fetched as that file, straight from
the index's file list (its JSON API names each file's URL and sha256): pip would prepare an sdist's metadata,
which runs the package's build in an isolated environment (minutes where it compiles a build dependency such as
Cython from source) and is code of the package run on this machine. ``--require-hashes`` makes pip take exactly
the pinned wheel; an sdist is checked against its pin after download. The cache is ``$VRAMLENS_CORPUS_CACHE`` or
``.corpus-cache/`` at the repository's root; an archive already there with the right sha256 is used as it is, so
repeated runs touch the network not at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "VRAMLENS_CORPUS_CACHE"
REPO_ROOT = Path(__file__).resolve().parents[3]
TRIES = 3
PIP_TIMEOUT_S = 300
INDEX_JSON = "https://pypi.org/pypi/{package}/json"  # the index's file lists, by release

# name-version(-build)?-python-abi-platform.whl (PEP 427)
_WHEEL = re.compile(
    r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")
SDIST_SUFFIXES = (".tar.gz", ".zip", ".tar.bz2")


class DownloadError(Exception):
    """A pinned archive could not be had: the index is unreachable, or it serves something else."""


@dataclass(frozen=True)
class Archive:
    package: str
    version: str
    file: str  # the archive's file name, as published
    sha256: str

    def __post_init__(self) -> None:
        if not (self.is_wheel or self.file.endswith(SDIST_SUFFIXES)):
            raise ValueError(f"{self.file}: neither a wheel's nor an sdist's file name")
        if not re.fullmatch(r"[0-9a-f]{64}", self.sha256):
            raise ValueError(f"{self.file}: sha256 must be 64 hex digits")

    @classmethod
    def from_dict(cls, data: dict) -> Archive:
        return cls(data["package"], data["version"], data["file"], data["sha256"])

    @property
    def is_wheel(self) -> bool:
        return _WHEEL.match(self.file) is not None

    def target_args(self) -> list[str]:
        """pip's options that pick this file on any machine: the wheel's own tags, or source only."""
        tags = _WHEEL.match(self.file)
        if tags is None:
            return ["--no-binary", ":all:", "--ignore-requires-python"]
        python = sorted(tags["py"].split("."), key=lambda t: (len(t), t))[-1]  # the newest Python it names
        implementation, digits = python[:2], python[2:]
        version = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return ["--only-binary", ":all:", "--implementation", implementation, "--python-version", version,
                "--abi", tags["abi"].split(".")[-1], "--platform", tags["plat"].split(".")[-1],
                "--ignore-requires-python"]  # read, never installed: the release's own Python bounds do not apply


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or REPO_ROOT / ".corpus-cache")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached(archive: Archive, cache: Path) -> Path | None:
    path = cache / archive.file
    return path if path.is_file() and sha256_of(path) == archive.sha256 else None


def _pip_download(archive: Archive, dest: Path) -> str:
    """One ``pip download`` of exactly this file (``--require-hashes``); returns pip's last words on failure."""
    requirement = dest / "requirement.txt"
    requirement.write_text(f"{archive.package}=={archive.version} --hash=sha256:{archive.sha256}\n", encoding="utf-8")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--quiet", "--retries", "2", "--timeout", "60", *archive.target_args(),
               "--require-hashes", "-r", str(requirement), "-d", str(dest)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"pip did not finish within {PIP_TIMEOUT_S} s"
    if done.returncode == 0:
        return ""
    lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip() and "is ignored" not in line]
    return lines[-1].strip() if lines else f"pip exited with {done.returncode}"


def _index_download(archive: Archive, dest: Path) -> str:
    """The sdist's own file, from the URL the index lists for it, without building anything; returns why not."""
    try:
        with urllib.request.urlopen(INDEX_JSON.format(package=archive.package), timeout=60) as answer:
            files, listing = json.load(answer).get("releases", {}).get(archive.version, []), answer.geturl()
        url = next((f["url"] for f in files if f.get("filename") == archive.file), None)
        if url is None:
            return f"the index lists no file {archive.file} for {archive.package} {archive.version}"
        url = urllib.parse.urljoin(listing, url)  # a mirror may list its files relative to the listing
        with urllib.request.urlopen(url, timeout=PIP_TIMEOUT_S) as answer, (dest / archive.file).open("wb") as out:
            while block := answer.read(1 << 20):
                out.write(block)
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as error:
        return f"the index could not be read: {error}"
    return ""


def fetch(archive: Archive, cache: Path | None = None) -> Path:
    """The archive's path in the cache, downloading it first when it is not there (TRIES attempts)."""
    cache = cache or cache_dir()
    if (path := cached(archive, cache)) is not None:
        return path
    cache.mkdir(parents=True, exist_ok=True)
    why = ""
    for attempt in range(TRIES):
        if attempt:
            time.sleep(2 * attempt)
        with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as tmp:
            why = (_pip_download if archive.is_wheel else _index_download)(archive, Path(tmp))
            got = Path(tmp) / archive.file
            if not why and not got.is_file():
                why = f"pip saved {sorted(p.name for p in Path(tmp).iterdir() if p.suffix != '.txt')} instead"
            elif not why and sha256_of(got) != archive.sha256:
                why = "pip saved a file with another sha256"
            if not why:
                got.replace(cache / archive.file)  # atomic: a half-written archive is never seen in the cache
                return cache / archive.file
    raise DownloadError(f"{archive.file} could not be downloaded from the package index with pip after {TRIES} "
                        f"tries ({why}); the real-code lint corpora need the index reachable once, then read "
                        f"{cache} (set {CACHE_ENV} to use another folder)")


def fetch_all(archives: list[Archive], cache: Path | None = None, workers: int = 4) -> dict[Archive, Path]:
    """Every archive in the cache, the missing ones downloaded a few at a time."""
    unique = list(dict.fromkeys(archives))
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = {archive: pool.submit(fetch, archive, cache) for archive in unique}
        return {archive: future.result() for archive, future in futures.items()}
    finally:  # the first failure stops the rest: an unreachable index fails every archive alike
        pool.shutdown(wait=True, cancel_futures=True)


def _members(path: Path, wanted) -> dict[str, bytes]:
    """The archive's files whose path inside it passes ``wanted``."""
    if path.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(path) as archive:
            return {n: archive.read(n) for n in sorted(archive.namelist()) if not n.endswith("/") and wanted(n)}
    with tarfile.open(path) as archive:
        out = {}
        for member in archive.getmembers():
            if member.isfile() and wanted(member.name):
                handle = archive.extractfile(member)
                assert handle is not None
                out[member.name] = handle.read()
        return dict(sorted(out.items()))


def read_member(path: Path, member: str) -> bytes:
    found = _members(path, lambda name: name == member)
    if member not in found:
        raise DownloadError(f"{path.name} has no {member}")
    return found[member]


def python_members(path: Path) -> dict[str, bytes]:
    """Every ``.py`` file of the archive by its path inside it (an sdist's paths start with its top folder)."""
    return _members(path, lambda name: name.endswith(".py"))
