"""What the project index changes on real code: every counted file of the released precision codebases linted
alone and as a file of its package (the engine's ``root``: the unpacked wheel), every rule on, and each finding
that appears or goes looked up in the hand-made judgments (tests/lint/realworld/pypi/precision/judgments.csv).

    VRAMLENS_CORPUS_CACHE=... .venv/bin/python benchmarks/lint_project_facts.py [--only NAME] [--default]

The archives must be in the cache (tests/lint/test_realworld.py brings them there). Prints per codebase the
findings gained and lost with their verdicts (true / false / debatable / unjudged), and the CPU time of both.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "lint"))

from realworld.judgments import load_judgments  # noqa: E402
from realworld.linting import all_codes  # noqa: E402
from realworld.precision import load_released_codebases  # noqa: E402

from vramlens.lint import lint_source  # noqa: E402


def findings_of(text: str, path: str, root: str | None, default: bool = False) -> set[tuple[str, int, str]]:
    """``default``: the checks a plain ``vramlens lint`` runs, else every check."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = lint_source(text, path, root=root) if default else lint_source(text, path, select=all_codes(), preview=True, root=root)
    lines = text.splitlines()
    return {(f.code, f.line, lines[f.line - 1].strip() if 0 < f.line <= len(lines) else "") for f in found if f.code != "VL000"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="one codebase by name")
    parser.add_argument("--default", action="store_true", help="the default checks only, not every check")
    args = parser.parse_args()
    judged = load_judgments()
    totals = {"gained": 0, "lost": 0}
    for codebase in load_released_codebases():
        if args.only and codebase.name != args.only:
            continue
        sources = codebase.sources()
        with tempfile.TemporaryDirectory() as folder:
            for rel, data in sources.items():
                target = Path(folder) / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            alone_ms = project_ms = 0.0
            changes = []
            for rel, data in sorted(sources.items()):
                text = data.decode("utf-8", errors="surrogateescape")
                path = str(Path(folder) / rel)
                start = time.process_time()
                alone = findings_of(text, path, None, args.default)
                alone_ms += (time.process_time() - start) * 1000
                start = time.process_time()
                project = findings_of(text, path, folder, args.default)
                project_ms += (time.process_time() - start) * 1000
                for sign, items in (("+", project - alone), ("-", alone - project)):
                    for code, line, line_text in sorted(items):
                        verdict = judged.get((codebase.name, rel, code, line_text))
                        changes.append(f"  {sign} {rel}:{line} {code} [{verdict.verdict if verdict else 'unjudged'}] {line_text[:90]}")
                        totals["gained" if sign == "+" else "lost"] += 1
        print(f"{codebase.name}: {len(sources)} files, alone {alone_ms / 1000:.1f} s, as a project {project_ms / 1000:.1f} s, "
              f"{len(changes)} findings changed")
        for line in changes:
            print(line)
    print(f"in all: {totals['gained']} findings gained, {totals['lost']} lost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
