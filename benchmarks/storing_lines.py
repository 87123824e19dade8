"""Where the user is sent, on real captures: is it the line to change?

    python benchmarks/storing_lines.py [--json] [--corpus DIR] [--truth FILE] [--sources DIR] [--split in-sample|held-out]

For every workload the truth file judges (benchmarks/storing_truth.json for tests/fixtures/realworld),
the capture is analysed with its recorded folder mapped onto the workload's script here
(workloads/<folder>/, or --sources DIR/<folder>/), and four places are compared with the truth:

- first link: the first `open_line` of "What to try" (the CLI's `open:`, the report's first button);
- code lens: where the editor's code lens goes;
- strongest figure: the line whose inline figure has the largest share (the darkest shade);
- top holder: the first holder the census names that is not the step's working set;
and whether the library's remedy is among the advice. Scores are printed per split: in-sample, and
held-out (ground_truth.json's `held_out`, when the truth file says `"_split": "ground_truth"`), apart; a
corpus of `<workload>.tar.xz` files is unpacked into a temporary folder first.
"""

from __future__ import annotations

import json
import sys
import tarfile
import tempfile
from pathlib import Path

from harness.paths import REALWORLD_CAPTURES, WORKLOADS
from harness.workloads import manifest
from vramlens.analysis import analyze_path
from vramlens.lsp.annotations import line_annotations, storing_lens
from vramlens.lsp.runtime_findings import peak_function

BY_NAME = manifest.BY_NAME

CORPUS = REALWORLD_CAPTURES
TRUTH = Path(__file__).resolve().parent / "storing_truth.json"
MEASURES = ("first_link", "code_lens", "strongest_figure", "top_holder", "remedy")


def _short(path: str | None, line: int | None) -> str | None:
    return None if path is None else f"{str(path).replace(chr(92), '/').rsplit('/', 1)[-1]}:{line}"


def places(analysis) -> dict:
    """The four places the engine sends the user, and the remedies it names."""
    first = next((a.arguments for r in analysis.recommendations for a in r.actions
                  if a.kind == "open_line" and a.arguments.get("path")), None)
    lens = storing_lens(analysis) or peak_function(analysis)
    figures = [a for annotations in line_annotations(analysis).values() for a in annotations]
    strongest = max(figures, key=lambda a: a.share, default=None)
    holder = next((h for h in analysis.holders if not h.working_set and h.kind != "cache"), None)
    return {
        "first_link": _short(first["path"], first["line"]) if first else None,
        "code_lens": _short(lens.local_path, lens.def_line) if lens else None,
        "strongest_figure": _short(strongest.local_path, strongest.line) if strongest else None,
        "top_holder": holder.root if holder else None,
        "top_holder_stored_at": _short(*holder.stored_at) if holder and holder.stored_at else None,
        "remedies": sorted({r.remedy for r in analysis.recommendations if r.remedy}),
        "storing": [_short(s.path, s.line) for s in analysis.storing],
        "cause": analysis.diagnosis.cause,
    }


def judge(found: dict, truth: dict) -> dict:
    """measure -> True / False, or None where the truth does not judge it. A holder of "stored" means: the
    top holder is the one the storing line stores into (its name is the census' to give)."""
    place = truth.get("first_line")
    if truth.get("holder") == "stored":
        stored = found["top_holder_stored_at"] == truth.get("storing") if found["top_holder"] else None
        verdicts = judge(found, dict(truth, holder=None))
        verdicts["top_holder"] = stored
        return verdicts
    return {
        "first_link": None if place is None else found["first_link"] == place,
        # a library case has no storing line of the user's: its lens and figure are not judged by it
        "code_lens": None if place is None else found["code_lens"] == place,
        "strongest_figure": None if truth.get("storing") is None else found["strongest_figure"] == truth["storing"],
        "top_holder": None if truth.get("holder") is None else found["top_holder"] == truth["holder"],
        "remedy": None if truth.get("remedy") is None else truth["remedy"] in found["remedies"],
    }


def row(folder: Path, truth: dict, sources: Path, split_from_ground_truth: bool) -> dict:
    recorded = json.loads((folder / "ground_truth.json").read_text())
    # the scripts are copied from workloads/<family>/ into the neutral folder they ran from
    workload = BY_NAME.get(folder.name)
    mapped = sources / (workload.family if workload else Path(recorded["recorded"]["folder"]).name)
    analysis = analyze_path(folder / "capture", source_root=str(mapped))
    found = places(analysis)
    recorded_line = (recorded.get("inputs") or {}).get("storing_line")
    if recorded_line and truth.get("first_line") and recorded_line != truth["first_line"]:
        print(f"note: {folder.name}: the truth file says {truth['first_line']}, its ground_truth.json "
              f"{recorded_line}; the recording's wins", file=sys.stderr)
        truth = dict(truth, first_line=recorded_line, storing=recorded_line if truth.get("storing") else None)
    held = bool(recorded.get("held_out")) if split_from_ground_truth else False
    return {"workload": folder.name, "held_out": held, **found, "judged": judge(found, truth), "truth": truth}


def unpacked(corpus: Path, scratch: Path) -> Path:
    """A corpus kept as one ``<workload>.tar.xz`` per workload is unpacked into ``scratch`` first."""
    archives = sorted(corpus.glob("*.tar.xz"))
    if not archives:
        return corpus
    for archive in archives:
        with tarfile.open(archive) as bundle:
            bundle.extractall(scratch, filter="data")
    return scratch


def score(rows: list[dict], measure: str) -> str:
    judged = [r["judged"][measure] for r in rows if r["judged"][measure] is not None]
    return f"{sum(judged)}/{len(judged)}" if judged else "-"


def main() -> int:
    argv = sys.argv[1:]

    def option(name: str, default: Path) -> Path:
        return Path(argv[argv.index(name) + 1]) if name in argv[:-1] else default

    corpus, truth_file, sources = option("--corpus", CORPUS), option("--truth", TRUTH), option("--sources", WORKLOADS)
    table = json.loads(truth_file.read_text())
    truths = {name: entry for name, entry in table.items() if not name.startswith("_")}
    split = table.get("_split") == "ground_truth"  # else every workload is in-sample (the engine was built on them)
    with tempfile.TemporaryDirectory(prefix="vramlens-storing-") as scratch:
        corpus = unpacked(corpus, Path(scratch))
        folders = {path.parent.name: path.parent for path in corpus.rglob("ground_truth.json")}
        rows = [row(folders[name], entry, sources, split) for name, entry in sorted(truths.items()) if name in folders]
    if "--split" in argv[:-1]:  # one part alone: the held-out part is measured once, after the in-sample work
        wanted = argv[argv.index("--split") + 1] == "held-out"
        rows = [r for r in rows if r["held_out"] == wanted]
    if "--json" in argv:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'workload':30} {'first link':26} {'code lens':26} {'strongest figure':26} {'remedy':6} top holder")
    for r in rows:
        def mark(measure: str) -> str:
            verdict = r["judged"][measure]
            return "" if verdict is None else (" ✓" if verdict else " ✗")
        print(f"{r['workload'] + (' (held-out)' if r['held_out'] else ''):30} {str(r['first_link']) + mark('first_link'):26} "
              f"{str(r['code_lens']) + mark('code_lens'):26} {str(r['strongest_figure']) + mark('strongest_figure'):26} "
              f"{mark('remedy') or ' -':6} {r['top_holder']}{mark('top_holder')}")
    print()
    for label, chosen in (("in-sample", [r for r in rows if not r["held_out"]]), ("held-out", [r for r in rows if r["held_out"]])):
        if chosen:
            print(f"{label} ({len(chosen)} workloads): " + ", ".join(f"{m} {score(chosen, m)}" for m in MEASURES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
