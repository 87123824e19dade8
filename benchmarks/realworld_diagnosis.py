"""The diagnosis on the real-workload corpus (tests/fixtures/realworld): the engine's cause against
the measured one, per workload and in all, in-sample and held-out apart.

    python benchmarks/realworld_diagnosis.py [--json] [--corpus DIR]

The split comes with each fixture: ground_truth.json's `held_out` and `round`, written from the
workload's manifest entry when it was recorded; fixtures recorded before that field existed take it
from the manifest, and the first round's rule (the name's sha1 ends in 0-4, the same rule as the lint
corpora) where the manifest leaves it open. Round 1's held-out names were in view while the engine
was tuned, so they are scored apart from round 3's, written afterwards and never seen by it.
A workload whose measurement named no cause (its confirming runs were not made, or it ended
otherwise) is listed but not scored.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from harness.paths import REALWORLD_CAPTURES
from harness.workloads import manifest
from vramlens.analysis import analyze_path
from vramlens.capture import CaptureError

BY_NAME = manifest.BY_NAME

CORPUS = REALWORLD_CAPTURES
GRAD_ADVICE = ("inference_mode", "no_grad")


def split_of(name: str, truth: dict) -> tuple[bool, int]:
    """(held out, round) as recorded in the ground truth, else from the manifest, else round 1's rule."""
    workload = BY_NAME.get(name)
    held = truth.get("held_out")
    if held is None:
        held = workload.is_held_out if workload else hashlib.sha1(name.encode()).hexdigest()[-1] in "01234"
    recorded_round = truth.get("round") or (workload.round if workload else 1)
    return bool(held), int(recorded_round)


def split_label(row: dict) -> str:
    if not row["held_out"]:
        return "in-sample"
    return "held-out round 1 (*)" if row["round"] == 1 else f"held-out round {row['round']} (**)"


def row(folder: Path) -> dict:
    truth = json.loads((folder / "ground_truth.json").read_text())
    held, recorded_round = split_of(folder.name, truth)
    split = {"held_out": held, "round": recorded_round}
    try:
        analysis = analyze_path(folder / "capture", source_root=None)
    except CaptureError as error:
        return {"workload": folder.name, **split, "measured": truth.get("cause"),
                "rule": truth.get("rule"), "cause": "(none)", "confidence": 0.0, "alternative": None, "mode": None,
                "steps": None, "completed": None, "top_lines": [str(error)[:60]], "confirm": None, "grad_advice": False,
                "roles": [], "holder": None}
    steps = analysis.steps
    advice = " ".join(r.action for r in analysis.recommendations)
    return {
        "workload": folder.name, **split, "library": truth.get("library"),
        "measured": truth.get("cause"), "rule": truth.get("rule"),
        "cause": analysis.diagnosis.cause, "confidence": round(analysis.diagnosis.confidence, 2),
        "alternative": analysis.diagnosis.alternative, "mode": analysis.mode,
        "steps": None if steps is None else len(steps.steps), "completed": None if steps is None else steps.completed,
        "top_lines": [line.label for line in analysis.lines if line.path][:2],
        "confirm": None if analysis.diagnosis.confirm is None else analysis.diagnosis.confirm.variants,
        "grad_advice": any(word in advice for word in GRAD_ADVICE),
        "roles": [(role.role, role.bytes) for role in analysis.roles][:3],
        "holder": analysis.holders[0].root if analysis.holders else None,
    }


def score(rows: list[dict]) -> str:
    judged = [r for r in rows if r["measured"]]
    right = [r for r in judged if r["cause"] == r["measured"]]
    confident_wrong = [r for r in judged if r["cause"] != r["measured"] and r["confidence"] >= 0.75]
    return (f"{len(right)}/{len(judged)} right" + (f" ({len(right) / len(judged):.0%})" if judged else "")
            + f", {len(confident_wrong)} wrong with high confidence")


def main() -> int:
    corpus = Path(sys.argv[sys.argv.index("--corpus") + 1]) if "--corpus" in sys.argv[:-1] else CORPUS
    rows = [row(folder) for folder in sorted(corpus.iterdir()) if (folder / "ground_truth.json").exists()]
    if "--json" in sys.argv:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'workload':32} {'measured':20} {'engine':20} conf  alt                  steps  top line")
    for r in rows:
        mark = "" if not r["measured"] else ("✓" if r["cause"] == r["measured"] else "✗")
        steps = "-" if r["steps"] is None else f"{r['completed']}/{r['steps']}"
        mark_split = "" if not r["held_out"] else (" *" if r["round"] == 1 else " **")
        print(f"{r['workload'] + mark_split:32} {str(r['measured']):20} {r['cause']:20} "
              f"{r['confidence']:.2f}  {str(r['alternative']):20} {steps:>6}  {', '.join(r['top_lines'])} {mark}")
    print()
    for label in sorted({split_label(r) for r in rows}, key=lambda l: (l != "in-sample", l)):
        print(f"{label}:", score([r for r in rows if split_label(r) == label]))
    print("all:", score(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
