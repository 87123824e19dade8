"""How much of the live memory the census leaves unexplained, before and after naming saved activations.

    PYTHONPATH=server python benchmarks/census_roles.py [--only NAME…]

For every real capture of the corpus (tests/fixtures/realworld/*/capture, and the compressed rounds
under tests/fixtures/realworld/round*/), the analysis' roles are computed twice, side by side: as before
(tensors without a holder are "other tensors Python can see") and as now (those an autograd graph keeps
are activations saved for backward, split by module, or a collection's kept graphs, from the census'
graph walk where it ran). Unexplained = "other" + "held by Python objects" without a named holder, as a
share of what was allocated at the census' moment. The goal: ≤ 10 % on every capture.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from harness.paths import REALWORLD_CAPTURES
from harness.workloads import unpack
from vramlens.analysis.attribution import roles
from vramlens.analysis.pipeline import analyze_path

extract_compressed = unpack.extract_compressed

GOAL = 0.10


def captures(scratch: Path) -> list[tuple[str, Path]]:
    fixtures = REALWORLD_CAPTURES
    found = [(folder.parent.name, folder) for folder in sorted(fixtures.glob("*/capture"))]
    for compressed in sorted(fixtures.glob("round*/")):
        for folder in extract_compressed(compressed, scratch):
            found.append((folder.name, folder / "capture"))
    return found


def unexplained(analysis) -> tuple[int, int, int, int]:
    """(allocated at the census' moment, other, held without a named holder, activations saved for backward)."""
    total = sum(share.bytes for share in analysis.roles)
    other = sum(share.bytes for share in analysis.roles if share.role == "other")
    unnamed = sum(holder.bytes for holder in analysis.holders if not holder.named and holder.kind not in ("cache", "frame"))
    saved = sum(share.bytes for share in analysis.roles if share.role == "activations")
    return total, other, unnamed, saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*")
    options = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, folder in captures(Path(scratch)):
            if options.only and name not in options.only:
                continue
            figures = {}
            for mode in (False, True):
                roles.NAME_SAVED = mode
                try:
                    analysis = analyze_path(folder)
                except Exception as error:  # a capture the analysis refuses (e.g. no CUDA allocation recorded)
                    figures[mode] = None
                    reason = f"{type(error).__name__}"
                    continue
                figures[mode] = unexplained(analysis), analysis.census_moment
            roles.NAME_SAVED = True
            if figures.get(True) is None or not figures[True][0][0]:
                rows.append((name, None, None, None, figures.get(True) and figures[True][1]))
                continue
            (total, other, unnamed, saved), moment = figures[True]
            (b_total, b_other, b_unnamed, _), _ = figures[False]
            rows.append((name, (b_other + b_unnamed) / max(b_total, 1), (other + unnamed) / max(total, 1), total, moment))
    print(f"{'capture':34s} {'moment':6s} {'allocated':>10s} {'before':>7s} {'after':>7s}")
    measured = [row for row in rows if row[1] is not None]
    for name, before, after, total, moment in rows:
        if before is None:
            print(f"{name:34s} {str(moment):6s} {'—':>10s}   no census roles")
            continue
        mark = "" if after <= GOAL else "  > 10 %"
        print(f"{name:34s} {moment:6s} {total / 2**30:9.2f}G {before:7.1%} {after:7.1%}{mark}")
    within = sum(1 for row in measured if row[2] <= GOAL)
    print(f"\n{len(measured)} captures with census roles: unexplained ≤ 10 % on {within} now, "
          f"{sum(1 for row in measured if row[1] <= GOAL)} before; worst now {max(row[2] for row in measured):.1%}, "
          f"before {max(row[1] for row in measured):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
