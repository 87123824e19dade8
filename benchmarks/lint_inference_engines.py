"""Inference engines for the lint's type facts, measured on the same torch code: speed, and what each infers.

    python benchmarks/lint_inference_engines.py [--lines 5000] [--samples 60] [--astroid PATH]

On the 5,000-line file made of the lint corpus (real training code, benchmarks/lint_speed.py), the value of
``--samples`` assignments whose value is a call (``out = model(x)``, ``loss = criterion(out, y)``,
``h = torch.cat(...)``) is asked of:

- jedi (in the venv as an IPython dependency): ``Script(text).infer(line, column)`` on the assigned name;
- astroid (``--astroid``: a folder where ``pip install --target`` put it; skipped without): ``infer()`` of the
  assignment's value in ``astroid.parse(text)``;
- the lint's own facts (vramlens.lint.tensor_types): the proof the fixes rest on.

Printed per engine: the time to answer all samples on a cold file (the editor's case after an edit of the
imports), and how many answers are "a torch.Tensor", something else, or unknown. torch is importable here (the
CPU wheel, with its own annotations); a user's editor interpreter often has none, which only makes the engines
answer less.
"""

from __future__ import annotations

import argparse
import ast
import site
import statistics
import time

from lint_speed import realistic_source

from vramlens.lint.facts.evidence import Evidence
from vramlens.lint.facts.file_facts import index_statements, merge_indexes
from vramlens.lint.facts.tensor_types import TensorTypes


def samples(tree: ast.Module, count: int) -> list[tuple[ast.Assign, ast.AST]]:
    """(assignment, enclosing function) of the first ``count`` single-name assignments of a call, spread out."""
    found = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Call):
                found.append((node, func))
    step = max(1, len(found) // count)
    return found[::step][:count]


def jedi_answers(text: str, picked) -> tuple[float, list[str]]:
    import jedi
    started = time.perf_counter()
    script = jedi.Script(text)
    answers = []
    for assign, _ in picked:
        target = assign.targets[0]
        try:
            names = script.infer(target.lineno, target.col_offset)
        except Exception:  # an engine failure is an unknown answer
            names = []
        answers.append(_verdict([n.full_name or n.name for n in names]))
    return time.perf_counter() - started, answers


def astroid_answers(text: str, picked, path: str) -> tuple[float, list[str]]:
    site.addsitedir(path)  # a `pip install --target` folder, .pth files included
    import astroid
    started = time.perf_counter()
    module = astroid.parse(text)
    by_line = {}
    for node in module.nodes_of_class(astroid.nodes.Assign):
        by_line.setdefault(node.lineno, node)
    answers = []
    for assign, _ in picked:
        node = by_line.get(assign.lineno)
        names = []
        if node is not None:
            try:
                names = [type(v).__name__ if v is astroid.Uninferable else (v.pytype() + ":" + getattr(v, "name", ""))
                         for v in node.value.infer()]
            except Exception:
                names = []
        answers.append(_verdict(names))
    return time.perf_counter() - started, answers


def own_answers(text: str, picked) -> tuple[float, list[str]]:
    started = time.perf_counter()
    tree = ast.parse(text)
    facts = merge_indexes([index_statements(tree.body)], tree, header_end=0)
    evidence = Evidence(facts)
    evidence.build()
    refound = samples(tree, len(picked))
    setup = time.perf_counter() - started
    print(f"  (vramlens: parsing and the file's facts, which the lint builds anyway: {setup * 1000:.0f} ms of the figure)")
    answers = []
    for assign, func in refound:
        cls = facts.class_of(func)
        types = TensorTypes(facts, evidence, func, cls)
        answers.append("tensor" if types.is_tensor(assign.value) else "unknown")
    return time.perf_counter() - started, answers


def _verdict(names: list) -> str:
    names = [str(n) for n in names]
    if not names or all("Uninferable" in n for n in names):
        return "unknown"
    if all("Tensor" in n for n in names):
        return "tensor"
    return "other"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--astroid", default="", help="folder holding an astroid install (pip install --target)")
    args = parser.parse_args()
    text = realistic_source(args.lines)
    picked = samples(ast.parse(text), args.samples)
    print(f"{text.count(chr(10))} lines, {len(picked)} assignments of a call asked")
    engines = [("vramlens tensor_types", lambda: own_answers(text, picked)), ("jedi", lambda: jedi_answers(text, picked))]
    if args.astroid:
        engines.append(("astroid", lambda: astroid_answers(text, picked, args.astroid)))
    for name, run in engines:
        seconds, answers = run()
        counts = {k: answers.count(k) for k in ("tensor", "other", "unknown")}
        print(f"{name:22} {seconds * 1000:9.0f} ms for all ({seconds * 1000 / max(len(picked), 1):7.1f} ms each)  "
              f"tensor {counts['tensor']:3}  other {counts['other']:3}  unknown {counts['unknown']:3}")


if __name__ == "__main__":
    main()
