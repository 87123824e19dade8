"""The driver: source text in, findings out. One parse, one ordered walk, every rule family."""

from __future__ import annotations

import ast
import gc
import os
import warnings
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Iterable, Iterator

from vramlens.regular_files import FileProblem

from ..catalog import FAMILIES, is_enabled
from ..facts.file_facts import merge_indexes
from ..facts.project import ProjectFacts
from ..findings import Edit, Finding, Fix
from ..project.index import project_index
from ..parse.source import decode_source, parse_error, parse_failure, read_source, too_large, unreadable
from ..walker.context import LintContext
from ..walker.walker import Walker
from .chunks import Chunk, ChunkCache, parse_file
from .components import components
from .notebooks import NOTEBOOK_SUFFIX, lint_notebook_bytes, read_notebook
from .suppression import drop_suppressed

_SKIPPED_FOLDERS = {".git", ".hg", ".venv", "venv", "env", "__pycache__", "node_modules", ".tox", ".mypy_cache", "site-packages", "build", "dist"}


def parse(text: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences and the like are not our findings
        return ast.parse(text)


def lint_source(text: str, path: str = "<source>", select: list[str] | None = None, ignore: list[str] | None = None,
                preview: bool = False, cache: ChunkCache | None = None, root: str | os.PathLike | None = None) -> list[Finding]:
    """All enabled findings for one file's text, sorted by position. Never raises on bad input.

    ``preview``: also run the checks that are off by default (catalog.py says why a check is preview).
    A ``# vramlens: ignore[CODE]`` comment on a finding's line silences it there (suppression.py).
    ``cache``: the previous lint of this document (the language server keeps one per file): only the
    parts of the file whose text changed are parsed and analysed again; the result is the same.
    ``root``: the project's folder: what the file imports from other files below it is read (lint/project/);
    None: this file alone."""
    large = too_large(len(text))
    if large:
        return [parse_error(path, large)]
    # The trees and everything built from them hold no reference cycles and are freed by reference counting;
    # cyclic collections while they are built would only traverse them again and again (a fifth of the time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        findings = _lint_source(text, path, cache, root)
    finally:
        if collecting:
            gc.enable()
    findings = drop_suppressed([f for f in findings if is_enabled(f.code, select, ignore, preview)], text)
    return sorted(findings, key=lambda f: f.sort_key)


def _lint_source(text: str, path: str, cache: ChunkCache | None, root: str | os.PathLike | None = None) -> list[Finding]:
    """With a cache, the file is analysed in parts, each kept for the next lint of the document; without one
    (the command line), in one part: nothing is kept, so what each part depends on need not be worked out."""
    kept = cache is not None
    cache = cache if kept else ChunkCache()
    try:
        parsed = parse_file(text, cache, whole=not kept)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        return [parse_error(path, *parse_failure(error))]
    if parsed.error is not None:
        return [parse_error(path, *parse_failure(parsed.error))]
    chunks = parsed.chunks
    header = [c for c in chunks if c.header]
    if _another_framework(chunks):
        return []
    file_globals = frozenset().union(*(c.index.globals for c in chunks))
    grad_off = any(c.index.grad_off_everywhere for c in chunks)
    project = project_index(root).facts_for(path, [c.index for c in chunks]) if root is not None else None
    body = [i for i, chunk in enumerate(chunks) if not chunk.header]
    parts = _batches(components(chunks), chunks) if kept else [body] if body else []
    # What other files say is part of every result's key: an edit there that changes it re-analyses this file.
    shared = (path, file_globals, grad_off, project.signature if project else None)
    header_statements = [(ast.dump(stmt), _bound_names(stmt)) for chunk in header for stmt in chunk.tree.body] if kept else []
    insert_line = _import_line(chunks)
    results: dict = {}
    findings: list[Finding] = []
    try:
        for group in parts:
            members = [chunks[i] for i in group]
            key = None
            if kept:
                uses = frozenset().union(*(c.uses for c in members))
                key = (shared, _header_key(header_statements, uses), tuple(c.text for c in members))
            found = cache.results.get(key)
            if found is None:
                found = _analyse(path, header, members, file_globals, grad_off, project)
            results[key] = found
            for chunk, chunk_findings in zip(members, found):
                findings.extend(_placed(f, chunk.start, insert_line) for f in chunk_findings)
    except RecursionError:
        return [parse_error(path, "this file nests too deeply to analyse; nothing was checked.")]
    if kept:
        cache.results = results  # what this text needs; older parts are dropped
    return findings


# Deep-learning frameworks other than PyTorch: a file that imports one of them and nothing of PyTorch holds no
# torch tensors to check (a TensorFlow agent's ``actor.predict`` is no forward of a torch module).
_OTHER_FRAMEWORKS = frozenset({"tensorflow", "keras", "tflearn", "jax", "flax", "haiku", "mxnet", "paddle", "chainer",
                               "theano", "mindspore", "oneflow"})
_TORCH_PACKAGES = ("torch", "lightning", "pytorch_lightning", "transformers", "accelerate", "timm", "diffusers")


def _imported_roots(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Import):
        return [alias.name.split(".", 1)[0] for alias in stmt.names]
    if isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
        return [stmt.module.split(".", 1)[0]]
    return []


def _another_framework(chunks: list[Chunk]) -> bool:
    """The file's top-level imports name another framework and nothing of PyTorch's."""
    roots = {root for chunk in chunks for stmt in chunk.tree.body for root in _imported_roots(stmt)}
    return bool(roots & _OTHER_FRAMEWORKS) and not any(root.startswith(_TORCH_PACKAGES) for root in roots)


def _bound_names(stmt: ast.stmt) -> frozenset[str] | None:
    """The names a header import binds; None for what every part depends on (a docstring, ``__future__``, a star
    import, an import of torch itself, which spells ``torch.no_grad`` in the fixes)."""
    if any(root in _OTHER_FRAMEWORKS for root in _imported_roots(stmt)):
        return None  # decides whether the file is checked at all
    if isinstance(stmt, ast.Import):
        if any(alias.name == "torch" or alias.name.startswith("torch.") for alias in stmt.names):
            return None
        return frozenset(alias.asname or alias.name.split(".", 1)[0] for alias in stmt.names)
    if isinstance(stmt, ast.ImportFrom):
        module = stmt.module or ""
        if module in ("__future__", "torch") or any(alias.name == "*" for alias in stmt.names):
            return None
        return frozenset(alias.asname or alias.name for alias in stmt.names)
    return None


def _header_key(statements: list[tuple[str, frozenset[str] | None]], uses: frozenset[str]) -> tuple[str, ...]:
    """What of the header a part's results depend on: the imports of names it reads, and what every part
    depends on, as their syntax (a comment or a moved line changes nothing). An import added or removed for
    names the part does not read leaves its results as they were."""
    return tuple(syntax for syntax, names in statements if names is None or names & uses)


_BATCH_LINES = 400  # small parts are analysed together: an edit re-analyses at most about this much plus its part


def _batches(parts: list[list[int]], chunks: list[Chunk]) -> list[list[int]]:
    """Consecutive small parts joined into batches of a few hundred lines (each analysis has a fixed cost)."""
    batches: list[list[int]] = []
    current: list[int] = []
    size = 0
    for part in parts:
        lines = sum(chunks[i].text.count("\n") + 1 for i in part)
        if current and size + lines > _BATCH_LINES:
            batches.append(sorted(current))
            current, size = [], 0
        current.extend(part)
        size += lines
    if current:
        batches.append(sorted(current))
    return batches


def _analyse(path: str, header: list[Chunk], members: list[Chunk], file_globals: frozenset[str], grad_off: bool,
             project: ProjectFacts | None = None) -> list[list[Finding]]:
    """Findings of one part of the file, per member chunk, in chunk-relative positions."""
    ordered = sorted(header + members, key=lambda c: c.start)
    tree = ast.Module(body=[stmt for chunk in ordered for stmt in chunk.tree.body], type_ignores=[])
    facts = merge_indexes([c.index for c in ordered], tree, header_end=-1)  # -1: an added import goes on line 0, placed later
    facts.globals = set(file_globals)
    facts.grad_off_everywhere = grad_off
    facts.project = project
    owners: dict[int, tuple[int, Chunk]] = {}
    for number, chunk in enumerate(members):
        for stmt in chunk.tree.body:
            owners[id(stmt)] = (number, chunk)
        for scope in chunk.index.scopes:
            owners[id(scope)] = (number, chunk)
    for chunk in header:
        for stmt in chunk.tree.body:
            owners[id(stmt)] = (-1, chunk)
    ctx = LintContext(path, "", tree, facts, owners)
    try:
        Walker(ctx, [family() for family in FAMILIES]).run()
    finally:
        # The evaluator points back at the walker and so at ctx: breaking that cycle lets reference
        # counting free the tree on return instead of leaving it to a full garbage collection.
        ctx.evaluator = None
    per_chunk: list[list[Finding]] = [[] for _ in members]
    for (number, _, _, _), finding in ctx.findings.items():
        if number >= 0:
            per_chunk[number].append(finding)
    return per_chunk


def _import_line(chunks: list[Chunk]) -> int:
    """Where an added ``import torch`` goes: after the docstring and ``__future__`` imports."""
    end = 0
    first = True
    for chunk in chunks:
        for stmt in chunk.tree.body:
            is_docstring = first and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
            first = False
            if not (is_docstring or (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__")):
                return end + 1
            end = chunk.absolute(stmt.end_lineno or stmt.lineno)
    return end + 1


def _placed(finding: Finding, start: int, insert_line: int) -> Finding:
    """A chunk-relative finding at its place in the file (line 0 edits: the import insertion point)."""
    shift = start - 1

    def edit(e: Edit) -> Edit:
        if e.line == 0:
            return Edit(insert_line, e.column, insert_line, e.end_column, e.new_text)
        return Edit(e.line + shift, e.column, e.end_line + shift, e.end_column, e.new_text)

    if not shift and not finding.fixes:
        return finding
    fixes = tuple(Fix(fix.title, tuple(edit(e) for e in fix.edits)) for fix in finding.fixes)
    return replace(finding, line=finding.line + shift, end_line=finding.end_line + shift, fixes=fixes)


def lint_bytes(data: bytes, path: str, select: list[str] | None = None, ignore: list[str] | None = None,
               preview: bool = False, root: str | os.PathLike | None = None) -> list[Finding]:
    large = too_large(len(data))
    if large:
        return [parse_error(path, large)]
    decoded = decode_source(data)
    if decoded.unreadable:
        return [parse_error(path, decoded.problem or "this file cannot be decoded; nothing was checked.")]
    findings = lint_source(decoded.text, path, select, ignore, preview, root=root)
    if decoded.problem and not any(f.code == "VL000" for f in findings):
        findings.insert(0, parse_error(path, decoded.problem))
    return findings


def lint_file(path: str | os.PathLike, select: list[str] | None = None, ignore: list[str] | None = None,
              preview: bool = False, root: str | os.PathLike | None = None) -> list[Finding]:
    """Findings of one file or notebook; one that cannot be read (a FIFO, a device, a dangling link, too large)
    says so. A notebook's findings name their cell (notebooks.py)."""
    notebook = str(path).endswith(NOTEBOOK_SUFFIX)
    try:
        data = read_notebook(path) if notebook else read_source(path)
    except FileProblem as problem:
        return [parse_error(str(path), unreadable(problem))]
    if notebook:
        return lint_notebook_bytes(data, str(path), partial(lint_source, root=root), select, ignore, preview)
    return lint_bytes(data, str(path), select, ignore, preview, root)


def iter_python_files(paths: Iterable[str | os.PathLike]) -> Iterator[Path]:
    """Files named on the command line, and every .py file and notebook below the folders named there."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for root, folders, files in os.walk(path):
                folders[:] = sorted(f for f in folders if f not in _SKIPPED_FOLDERS and not f.startswith("."))
                for name in sorted(files):
                    if name.endswith((".py", ".pyw", NOTEBOOK_SUFFIX)):
                        yield Path(root) / name
        else:
            yield path


def lint_paths(paths: Iterable[str | os.PathLike], select: list[str] | None = None, ignore: list[str] | None = None,
               preview: bool = False, root: str | os.PathLike | None = None) -> list[Finding]:
    findings: list[Finding] = []
    for path in iter_python_files(paths):
        findings.extend(lint_file(path, select, ignore, preview, root))
    return findings
