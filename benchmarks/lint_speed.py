"""Time `vramlens lint` on a 2,000-line file made of real training/evaluation code.

The file is assembled from the lint corpus (cases reduced from public PyTorch projects), repeated
until it reaches the target size. Times are CPU time of this process (time.process_time), which a
shared machine disturbs less than wall time. Each run lints the file and, right after, parses it
with a bare ``ast.parse``, so both see the same load; prints median and min of each and the median
ratio lint / parse.

With ``--edits``, also what the editor pays after an edit: the file is linted once with a cache (as the
language server keeps one per document), then a line in a function body near the middle is changed
and changed back, each version linted with the cache; and the same for an edit of the imports at the
top, which every part of the file depends on (the worst case).

With ``--project``, the file is linted as one file of a project (the engine's ``root``): each corpus file
becomes a module of a temporary folder, and the file imports every top-level function and class of each,
calls each function once and derives a class from each class, so that every lint resolves those imports and
consults the project index (its summaries are cached after the first lint, as in the language server).

    .venv/bin/python benchmarks/lint_speed.py [--lines 2000] [--runs 41] [--file PATH] [--edits] [--project]
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from vramlens.lint import lint_source
from vramlens.lint.engine.chunks import ChunkCache

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "lint" / "corpus"


def realistic_source(target_lines: int) -> str:
    pieces = [p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*/*.py"))]
    if not pieces:
        raise SystemExit("no corpus files found under tests/lint/corpus")
    lines: list[str] = []
    round_number = 0
    while len(lines) < target_lines:
        for index, piece in enumerate(pieces):
            if len(lines) >= target_lines:
                break
            # Rename top-level definitions per copy so the file reads like one big module.
            lines.extend(piece.replace("def ", f"def r{round_number}_{index}_").replace("class ", f"class R{round_number}_{index}_").splitlines())
            lines.append("")
        round_number += 1
    return "\n".join(lines) + "\n"  # whole files only, so the result still parses


def body_edit(text: str) -> str:
    """The text with a comment typed at the end of a line inside a function body, near the middle."""
    lines = text.split("\n")
    for number in range(len(lines) // 2, len(lines)):
        line = lines[number]
        stripped = line.strip()
        if line.startswith("        ") and stripped and not stripped.startswith(("#", '"', "'")) and not line.rstrip().endswith(("\\", ",", "(")):
            lines[number] = line + "  # edited"
            return "\n".join(lines)
    raise ValueError("no function body line found")


def header_edit(text: str) -> str:
    """The text with a comment typed after its first import."""
    lines = text.split("\n")
    number = next(i for i, line in enumerate(lines) if line.startswith(("import ", "from ")))
    lines[number] += "  # edited"
    return "\n".join(lines)


def import_added(text: str) -> str:
    """The text with an import added after its first one (a module the file does not read yet)."""
    lines = text.split("\n")
    number = next(i for i, line in enumerate(lines) if line.startswith(("import ", "from ")))
    lines.insert(number + 1, "import collections")
    return "\n".join(lines)


def in_project(source: str, folder: Path) -> tuple[str, str]:
    """(the text, its path) of ``source`` as a file of a project in ``folder`` that imports the corpus files
    as modules and uses what each defines."""
    header, uses = [], []
    for index, piece in enumerate(sorted(CORPUS.glob("*/*.py"))):
        text = piece.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        (folder / f"m{index}.py").write_text(text, encoding="utf-8")
        defined = [s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))]
        if defined:
            header.append(f"from m{index} import {', '.join(s.name for s in defined)}")
        for s in defined:
            uses.append(f"{s.name}()" if isinstance(s, ast.FunctionDef) else f"class P{index}_{s.name}({s.name}):\n    pass\n")
    text = "\n".join(header) + "\n" + source + "\n" + "\n".join(uses) + "\n"
    path = folder / "bench.py"
    path.write_text(text, encoding="utf-8")
    return text, str(path)


def edit_times(lint, source: str, edited: str, runs: int) -> list[float]:
    """CPU ms of linting ``edited`` and ``source`` in turn with one cache, after a first lint."""
    cache = ChunkCache()
    lint(source, cache=cache)
    times = []
    for index in range(runs):
        text = edited if index % 2 == 0 else source
        times.append(_cpu_ms(lambda: lint(text, cache=cache)))
    return times


def _cpu_ms(fn) -> float:
    start = time.process_time()
    fn()
    return (time.process_time() - start) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=41)
    parser.add_argument("--file", help="time this file instead of the assembled one")
    parser.add_argument("--edits", action="store_true", help="also time re-linting after an edit, with the cache")
    parser.add_argument("--project", action="store_true", help="lint it as a file of a project that imports others")
    args = parser.parse_args()
    source = Path(args.file).read_text(encoding="utf-8") if args.file else realistic_source(args.lines)
    with tempfile.TemporaryDirectory() as folder:
        lint = partial(lint_source, path="bench.py")
        if args.project:
            source, path = in_project(source, Path(folder))
            lint = partial(lint_source, path=path, root=folder)
            first = _cpu_ms(lambda: lint(source))
            print(f"project of {len(list(Path(folder).glob('m*.py')))} imported modules: first lint {first:.1f} ms "
                  "(every imported module read and summarised)")
        return _measure(args, source, lint)


def _measure(args: argparse.Namespace, source: str, lint) -> int:
    findings = lint(source)  # warm up imports and caches
    lint_times, parse_times, ratios = [], [], []
    for _ in range(args.runs):
        lint_ms = _cpu_ms(lambda: lint(source))
        parse_ms = _cpu_ms(lambda: ast.parse(source))
        lint_times.append(lint_ms)
        parse_times.append(parse_ms)
        ratios.append(lint_ms / parse_ms if parse_ms else float("nan"))
    print(f"{source.count(chr(10))} lines, {len(findings)} findings, CPU time over {args.runs} runs: "
          f"lint median {statistics.median(lint_times):.1f} ms (min {min(lint_times):.1f}); "
          f"ast.parse median {statistics.median(parse_times):.1f} ms (min {min(parse_times):.1f}); "
          f"lint/parse median {statistics.median(ratios):.2f}")
    if args.edits:
        for label, edited in (("edit in a function body", body_edit(source)), ("edit of the imports", header_edit(source)),
                              ("import added", import_added(source))):
            times = edit_times(lint, source, edited, args.runs)
            print(f"  after an {label}, with the cache: median {statistics.median(times):.1f} ms (min {min(times):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
