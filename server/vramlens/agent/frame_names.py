"""Names of the library functions in a snapshot's frames, as their source defines them.

A snapshot frame carries only the function's bare name (``forward``); the class it belongs to
(``GPT2Attention.forward``) is in the library's source, which is on the recording machine but maybe
not where the capture is read. So at capture time the library files the frames name are parsed
once (standard library ``ast``, bounded in files, size and time) and the capture keeps, per file,
the line ranges of each ``Class.method``.
"""

from __future__ import annotations

import ast
import os
import time

MAX_FILES = 400
MAX_FILE_BYTES = 4 * 2**20
BUDGET_S = 1.0


def _frames(snapshot: dict):
    for segment in snapshot.get("segments") or ():
        for block in segment.get("blocks") or ():
            yield from block.get("frames") or ()
    for trace in snapshot.get("device_traces") or ():
        for entry in trace:
            yield from entry.get("frames") or ()


def _library_file(filename: str) -> bool:
    normalized = filename.replace("\\", "/")
    return filename.endswith(".py") and ("site-packages/" in normalized or "dist-packages/" in normalized) \
        and "packages/torch/" not in normalized


def _scopes(path: str) -> list[list]:
    with open(path, "rb") as handle:
        tree = ast.parse(handle.read())
    found: list[list] = []

    def visit(node, classes: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, classes + [child.name])
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append([child.lineno, getattr(child, "end_lineno", None) or child.lineno,
                              ".".join(classes[-1:] + [child.name])])
                visit(child, classes)
            else:
                visit(child, classes)

    visit(tree, [])
    return found


def frame_names(snapshot: dict | None, budget_s: float = BUDGET_S) -> dict:
    """{filename: [[first line, last line, "Class.method"], ...]} for the library files the frames
    name; files that cannot be read in the budget are left out. Never raises."""
    if not isinstance(snapshot, dict):
        return {}
    deadline = time.monotonic() + budget_s
    files: set[str] = set()
    seen: set[int] = set()
    try:
        for count, frame in enumerate(_frames(snapshot)):
            if not count & 0xFFFF and time.monotonic() > deadline:
                break
            if id(frame) in seen:
                continue
            seen.add(id(frame))
            filename = frame.get("filename") if isinstance(frame, dict) else None
            if isinstance(filename, str) and filename not in files and _library_file(filename):
                files.add(filename)
                if len(files) >= MAX_FILES:
                    break
    except Exception:
        return {}
    names = {}
    for filename in sorted(files):
        if time.monotonic() > deadline:
            break
        try:
            if os.path.isfile(filename) and os.path.getsize(filename) <= MAX_FILE_BYTES:
                scopes = _scopes(filename)
                if scopes:
                    names[filename] = scopes
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return names
