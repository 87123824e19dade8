"""The driver: source text in, findings out. One parse, one ordered walk, every rule family."""

from __future__ import annotations

import ast
import gc
import os
import warnings
from pathlib import Path
from typing import Iterable, Iterator

from .catalog import check, is_enabled
from .empty_cache_in_loop import EmptyCacheInLoop
from .facts import gather_facts
from .findings import Finding
from .host_tensor_to_device import HostTensorToDevice
from .missing_no_grad import MissingNoGrad
from .oom_retry_in_except import OomRetryInExcept
from .retain_graph_in_loop import RetainGraphInLoop
from .retained_graph import RetainedGraph
from .source import decode_source, parse_failure, read_source, too_large, unreadable
from vramlens.regular_files import FileProblem
from .walker import LintContext, Walker

_SKIPPED_FOLDERS = {".git", ".hg", ".venv", "venv", "env", "__pycache__", "node_modules", ".tox", ".mypy_cache", "site-packages", "build", "dist"}


def _families() -> list:
    return [RetainedGraph(), MissingNoGrad(), RetainGraphInLoop(), EmptyCacheInLoop(), HostTensorToDevice(), OomRetryInExcept()]


def parse_error(path: str, message: str, line: int = 1, column: int = 0) -> Finding:
    info = check("VL000")
    return Finding(path, max(line, 1), max(column, 0), max(line, 1), max(column, 0), info.code, info.rule, info.severity, message)


def parse(text: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences and the like are not our findings
        return ast.parse(text)


def lint_source(text: str, path: str = "<source>", select: list[str] | None = None, ignore: list[str] | None = None) -> list[Finding]:
    """All enabled findings for one file's text, sorted by position. Never raises on bad input."""
    large = too_large(len(text))
    if large:
        return [parse_error(path, large)]
    # The tree and everything built from it hold no reference cycles and are freed by reference counting;
    # cyclic collections while they are built would only traverse them again and again (a fifth of the time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _lint_source(text, path, select, ignore)
    finally:
        if collecting:
            gc.enable()


def _lint_source(text: str, path: str, select: list[str] | None, ignore: list[str] | None) -> list[Finding]:
    try:
        tree = parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        return [parse_error(path, *parse_failure(error))]
    ctx = None
    try:
        ctx = LintContext(path, text, tree, gather_facts(tree))
        Walker(ctx, _families()).run()
    except RecursionError:
        return [parse_error(path, "this file nests too deeply to analyse; nothing was checked.")]
    finally:
        if ctx is not None:
            # The evaluator points back at the walker and so at ctx: breaking that cycle lets reference
            # counting free the tree on return instead of leaving it to a full garbage collection.
            ctx.evaluator = None
    findings = [f for f in ctx.findings.values() if is_enabled(f.code, select, ignore)]
    return sorted(findings, key=lambda f: f.sort_key)


def lint_bytes(data: bytes, path: str, select: list[str] | None = None, ignore: list[str] | None = None) -> list[Finding]:
    large = too_large(len(data))
    if large:
        return [parse_error(path, large)]
    decoded = decode_source(data)
    findings = lint_source(decoded.text, path, select, ignore)
    if decoded.problem and not any(f.code == "VL000" for f in findings):
        findings.insert(0, parse_error(path, f"this file {decoded.problem}."))
    return findings


def lint_file(path: str | os.PathLike, select: list[str] | None = None, ignore: list[str] | None = None) -> list[Finding]:
    """Findings of one file; one that cannot be read (a FIFO, a device, a dangling link, too large) says so."""
    try:
        data = read_source(path)
    except FileProblem as problem:
        return [parse_error(str(path), unreadable(problem))]
    return lint_bytes(data, str(path), select, ignore)


def iter_python_files(paths: Iterable[str | os.PathLike]) -> Iterator[Path]:
    """Files named on the command line, and every .py file below the folders named there."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for root, folders, files in os.walk(path):
                folders[:] = sorted(f for f in folders if f not in _SKIPPED_FOLDERS and not f.startswith("."))
                for name in sorted(files):
                    if name.endswith((".py", ".pyw")):
                        yield Path(root) / name
        else:
            yield path


def lint_paths(paths: Iterable[str | os.PathLike], select: list[str] | None = None, ignore: list[str] | None = None) -> list[Finding]:
    findings: list[Finding] = []
    for path in iter_python_files(paths):
        findings.extend(lint_file(path, select, ignore))
    return findings
