"""Walks a pinned PyPI download ranking by round 6's rule and picks that round's held-out precision codebases.

The rule is the README's ("Rounds and the split", round 6: round 4's rule with round 5's three readings).

    python tests/lint/realworld/walk_ranking.py --ranking-repo DIR [--ranking-commit 7ec9534] [--write FILE]

``DIR`` is a clone (bare or not) of hugovk/top-pypi-packages; its ``top-pypi-packages.json`` at the commit is read
in rank order, from the rank after ``--after`` (round 5's last pick, as round 5 continued round 4's walk). A package is skipped when it is in either corpus already (any round, as a codebase or a
case, or the same code as one there), when its PyPI summary does not hold ``torch`` in any case, when its latest
release has no pure-Python wheel (tagged ``none-any`` for Python 3: ``py3`` or one per version such as ``py311``),
or when that wheel's parsed Python code has no call of an attribute named ``backward``; the first three left are
taken. One line is printed per package looked at, with its rank, version and why it was skipped, or ``taken``.
``--write FILE`` writes the taken ones as ``codebases.json`` entries (``"round": 6``, held out), counted as
``pin.py`` counts: ``<package>/`` for each of the wheel's top-level package folders, without any ``tests/`` folder.
Each wheel looked into is downloaded with pip into the corpus cache (``archives.cache_dir``), pinned by the sha256
PyPI lists for it.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realworld.archives import _WHEEL, Archive, fetch, python_members  # noqa: E402
from realworld.precision import GITHUB_PRECISION, PYPI_PRECISION, ReleasedCodebase  # noqa: E402
from realworld.recall import GITHUB_RECALL, PYPI_RECALL  # noqa: E402

ROUND = 6
TAKE = 3
# a name in the corpora (a package, a codebase, a case's repository) or on PyPI -> the package it is the same code as
SAME_CODE = {
    "pytorch-lightning": "lightning", "lightning-fabric": "lightning", "diffusers-examples": "diffusers",
    "keops": "pykeops", "pyro": "pyro-ppl", "olmo": "ai2-olmo", "parallelwavegan": "parallel-wavegan",
}
LICENSE_CLASSIFIERS = {
    "MIT License": "MIT", "Apache Software License": "Apache-2.0", "BSD License": "BSD-3-Clause",
    "GNU General Public License v3 (GPLv3)": "GPL-3.0", "Mozilla Public License 2.0 (MPL 2.0)": "MPL-2.0",
    "GNU Lesser General Public License v3 (LGPLv3)": "LGPL-3.0", "GNU Affero General Public License v3": "AGPL-3.0",
}


def canonical(name: str) -> str:
    """The PEP 503 normalized name, mapped onto the package it is the same code as."""
    name = re.sub(r"[-_.]+", "-", name).lower()
    return SAME_CODE.get(name, name)


def corpus_names() -> set[str]:
    """Every package, codebase and repository of both corpora (released and commit), canonical."""
    names = set()
    for entry in json.loads((PYPI_PRECISION / "codebases.json").read_text(encoding="utf-8")):
        names |= {entry["name"], entry["package"]}
    for entry in json.loads((GITHUB_PRECISION / "codebases.json").read_text(encoding="utf-8")):
        names.add(entry["name"])
    names |= {json.loads(p.read_text(encoding="utf-8"))["package"] for p in PYPI_RECALL.glob("*/case.json")}
    for case in GITHUB_RECALL.glob("*/case.json"):
        names.add(json.loads(case.read_text(encoding="utf-8"))["repo"].split("/")[-1])
    return {canonical(n) for n in names}


def ranking(repo: str, commit: str) -> list[str]:
    text = subprocess.run(["git", "-C", repo, "show", f"{commit}:top-pypi-packages.json"],
                          capture_output=True, text=True, check=True).stdout
    return [row["project"] for row in json.loads(text)["rows"]]


def pypi(package: str, tries: int = 3) -> dict | None:
    """PyPI's JSON of the package's latest release, or None when PyPI has no such project."""
    for attempt in range(1, tries + 1):
        time.sleep(0.25)  # one request at a time, spaced: the walk looks up one summary per package
        try:
            with urllib.request.urlopen(f"https://pypi.org/pypi/{package}/json", timeout=30) as answer:
                return json.load(answer)
        except (urllib.error.URLError, TimeoutError) as err:  # HTTPError is a URLError
            if getattr(err, "code", None) == 404:
                return None
            if attempt == tries:
                raise
            time.sleep(2 * attempt)
    raise AssertionError("not reached")


def pure_python_wheel(files: list[dict]) -> dict | None:
    """The release's ``none-any`` wheel for Python 3: a ``py3`` one, else the one for this interpreter's Python,
    else the newest Python's."""
    def pythons(file: dict) -> list[str]:
        tags = _WHEEL.match(file["filename"])
        if file["packagetype"] != "bdist_wheel" or not tags or (tags["abi"], tags["plat"]) != ("none", "any"):
            return []
        return [t for t in tags["py"].split(".") if re.fullmatch(r"py3\d*", t)]

    wheels = [(t, f) for f in files for t in pythons(f)]
    here = f"py3{sys.version_info.minor}"
    for wanted in ("py3", here):
        if found := [f for t, f in wheels if t == wanted]:
            return found[0]
    return max(wheels, key=lambda tf: int(tf[0][3:]))[1] if wheels else None


def backward_calls(sources: dict[str, bytes]) -> int:
    """Calls whose function is an attribute named ``backward`` in the files' parsed code (files that do not parse
    as Python 3 hold none)."""
    count = 0
    for data in sources.values():
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        count += sum(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                     and node.func.attr == "backward" for node in ast.walk(tree))
    return count


def project_url(info: dict) -> str:
    urls = list((info.get("project_urls") or {}).values()) + [info.get("home_page") or ""]
    for url in urls:
        if match := re.match(r"https?://(www\.)?github\.com/[^/\s]+/[^/\s#?]+", url or ""):
            return "https://github.com/" + match.group(0).split("github.com/")[1].removesuffix(".git")
    return next((u for u in urls if u), f"https://pypi.org/project/{info['name']}/")


def license_of(info: dict) -> str:
    text = (info.get("license_expression") or info.get("license") or "").strip()
    if text and "\n" not in text and len(text) <= 40:
        return text
    for classifier in info.get("classifiers", []):
        if classifier.startswith("License :: OSI Approved :: "):
            return LICENSE_CLASSIFIERS.get(classifier.rsplit(" :: ", 1)[1], classifier.rsplit(" :: ", 1)[1])
    return "unknown"


def entry_for(info: dict, wheel: dict, sources: dict[str, bytes]) -> dict:
    """The codebase's ``codebases.json`` entry, counted as ``pin.py`` counts."""
    tops = sorted({p.split("/")[0] + "/" for p in sources if "/" in p and not p.split("/")[0].endswith(".dist-info")}
                  - {"tests/"})
    name = re.sub(r"[-_.]+", "-", info["name"]).lower()
    entry = {"name": name, "package": info["name"], "version": info["version"], "file": wheel["filename"],
             "sha256": wheel["digests"]["sha256"], "url": project_url(info), "license": license_of(info),
             "held_out": True, "include": tops, "exclude": ["tests/"], "round": ROUND}
    counted = {p: d for p, d in sources.items() if ReleasedCodebase(**entry).counts(p)}
    return entry | {"files": len(counted), "lines": sum(d.count(b"\n") for d in counted.values())}


def look(package: str, known: set[str]) -> tuple[str, str, dict | None]:
    """(version, why it is skipped or "taken", its entry when taken)."""
    if canonical(package) in known:
        return "-", "in the corpus (or the same code as one there)", None
    data = pypi(package)
    if data is None:
        return "-", "not on PyPI", None
    info = data["info"]
    if "torch" not in (info.get("summary") or "").lower():
        return info["version"], "summary does not hold torch", None
    wheel = pure_python_wheel(data["urls"])
    if wheel is None:
        return info["version"], "no pure-Python wheel (none-any, Python 3)", None
    sources = python_members(fetch(Archive(package, info["version"], wheel["filename"], wheel["digests"]["sha256"])))
    calls = backward_calls(sources)
    if not calls:
        return info["version"], f"no parsed .backward( call in {wheel['filename']}", None
    entry = entry_for(info, wheel, sources)
    return info["version"], (f"taken: {wheel['filename']}, {calls} .backward( calls, {' '.join(entry['include'])} "
                             f"{entry['files']} files, {entry['lines']} lines, {entry['license']}"), entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranking-repo", required=True, help="a clone of hugovk/top-pypi-packages (bare is fine)")
    parser.add_argument("--ranking-commit", default="7ec9534", help="the ranking's pinned commit (default 7ec9534)")
    parser.add_argument("--after", default="vector-quantize-pytorch",
                        help="walk from the rank after this package's (default: round 5's last pick)")
    parser.add_argument("--write", type=Path, metavar="FILE", help="write the taken ones as codebases.json entries")
    args = parser.parse_args(argv)
    known, taken = corpus_names(), []
    ranked = ranking(args.ranking_repo, args.ranking_commit)
    start = ranked.index(args.after) + 1
    for rank, package in enumerate(ranked[start:], start=start + 1):
        version, why, entry = look(package, known)
        print(f"{rank:>5} {package} {version}: {why}", flush=True)
        if entry:
            taken.append(entry)
            if len(taken) == TAKE:
                break
    if args.write:
        args.write.write_text(json.dumps(taken, indent=2) + "\n", encoding="utf-8")
    return 0 if len(taken) == TAKE else 1


if __name__ == "__main__":
    sys.exit(main())
