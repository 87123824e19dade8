"""The drill-down below a user line: when one line of the user's code (``trainer.train()``,
``model.generate()``) holds most of the memory through library code, its live bytes as a tree of
the library frames beneath it, each named by its enclosing class and method as the library's own
source defines them (``GPT2Attention.forward``).

The allocations the autograd engine made (no Python frame) get a tree of their own, split by what
the trace can tell: with ``--stacks all`` the autograd function in their C++ frames
(``MmBackward0``), and with a census whether a block is a parameter's gradient.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from functools import lru_cache

from vramlens.analysis.load.sources import USER, SourceResolver
from vramlens.analysis.model import FrameNode
from vramlens.regular_files import FileProblem, read_regular_file
from vramlens.analysis.replay.trace import NO_FRAME, frames_key

MAX_SOURCE_BYTES = 8 * 2**20  # a library file larger than this is not parsed for class names
MIN_SHARE = 0.01  # branches below this share of their root are left out
MAX_CHILDREN = 8
MAX_DEPTH = 12
TREES = 3  # user lines drilled into
MIN_LIBRARY_SHARE = 0.5  # a line is drilled into when library frames made at least this share of its bytes
# Frames that only pass a call through (module calls, decorators): never a branch of their own.
_PASS_THROUGH_FUNCTIONS = {"_call_impl", "_wrapped_call_impl", "wrapper", "inner", "_fn", "decorate_context",
                           "wrapped", "new_fn", "forward_call", "__call__"}
_TORCH = re.compile(r"(?:site|dist)-packages/torch/")
_TORCH_KEPT = ("torch/nn/functional.py", "torch/functional.py")
_BACKWARD_NODE = re.compile(r"([A-Z]\w*Backward\d*)")
# Nodes that never hold a def or a class (a lambda is no FunctionDef): their subtrees, most of a
# file's nodes, are not walked.
_NO_DEFINITIONS = (ast.expr, ast.expr_context, ast.operator, ast.arguments, ast.keyword, ast.alias)


def _python(frame: dict) -> bool:
    filename = frame.get("filename") or "??"
    return filename != "??" and filename.endswith(".py")


def _kept(frame: dict) -> bool:
    """Whether a library frame below the user line is a branch of the tree."""
    filename = (frame.get("filename") or "").replace("\\", "/")
    if (frame.get("name") or "") in _PASS_THROUGH_FUNCTIONS:
        return False
    if _TORCH.search(filename):
        return filename.endswith(_TORCH_KEPT) or ("/torch/nn/modules/" in filename and not filename.endswith("module.py"))
    return "/vramlens/agent/" not in filename


def _readable_library_file(path: str) -> str | None:
    """The file to read class names from: only Python files of an installed package (site- or
    dist-packages) that are regular files of a sane size, here or mapped onto this interpreter's
    own package folders by the part after "site-packages/"."""
    normalized = path.replace("\\", "/")
    match = re.search(r"(?:site|dist)-packages/(.+\.py)$", normalized)
    if match is None:
        return None
    candidates = [path] + [os.path.join(entry, match.group(1)) for entry in sys.path
                           if entry.endswith(("site-packages", "dist-packages"))]
    for candidate in candidates:
        try:
            stat = os.stat(candidate)
        except OSError:
            continue
        if os.path.isfile(candidate) and not os.path.islink(candidate) and stat.st_size <= MAX_SOURCE_BYTES:
            return candidate
    return None


# Where a class statement may begin: a line whose first word (after indentation) is ``class`` followed
# by a space or a line continuation. Every class statement is on such a line (it can follow no ``;`` or
# ``:`` on its line); a docstring's example may be too, so this is an upper bound on where classes are.
_CLASS_START = re.compile(r"^[ \t\f\v]*class[ \t\f\v\\]", re.MULTILINE)
_UNKNOWN = 0


@lru_cache(maxsize=256)
def _first_class_line(path: str) -> int:
    """The first line of the file where a class statement may begin (a huge number when none may);
    ``_UNKNOWN`` when the file cannot be decoded as Python decodes it. Parsing a file (torch's
    nn/functional.py: 20 ms) is needed only to name a method's class: no class before the frame's
    line, no class to name."""
    import tokenize  # noqa: PLC0415 - imported already by the standard library's linecache

    try:
        data = read_regular_file(path, MAX_SOURCE_BYTES, "library source")
        encoding, _ = tokenize.detect_encoding(iter(data.splitlines(keepends=True)).__next__)
        text = data.decode(encoding)
    except (FileProblem, SyntaxError, ValueError, LookupError, StopIteration):
        return _UNKNOWN
    # The line numbers are the parser's: it ends lines at \r\n, \r and \n only.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    found = _CLASS_START.search(text)
    return text.count("\n", 0, found.start()) + 1 if found else sys.maxsize


@lru_cache(maxsize=256)
def _scopes(path: str) -> tuple:
    """(first line, last line, "Class.method") of every function in the file, innermost last."""
    try:
        tree = ast.parse(read_regular_file(path, MAX_SOURCE_BYTES, "library source"))
    except (FileProblem, SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    found = []

    def visit(node, classes: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, classes + [child.name])
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = ".".join(classes[-1:] + [child.name])
                found.append((child.lineno, getattr(child, "end_lineno", child.lineno) or child.lineno, name))
                visit(child, classes)
            elif not isinstance(child, _NO_DEFINITIONS):
                visit(child, classes)

    visit(tree, [])
    return tuple(found)


def _recorded_name(names: dict, filename: str, line: int) -> str | None:
    """The name the capture recorded for the function around ``line`` (capture.json ``frame_names``)."""
    scopes = names.get(filename)
    if not isinstance(scopes, list):
        return None
    enclosing = [scope for scope in scopes if isinstance(scope, list) and len(scope) == 3
                 and isinstance(scope[0], int) and isinstance(scope[1], int) and scope[0] <= line <= scope[1]]
    return str(max(enclosing, key=lambda scope: scope[0])[2])[:200] if enclosing else None


def frame_label(frame: dict, names: dict | None = None) -> str:
    """``Class.method``: as the capture recorded it from the library's source, or from that source
    when it is here, else the function's bare name."""
    name = frame.get("name") or "?"
    filename, line = frame.get("filename") or "", frame.get("line") or 0
    recorded = _recorded_name(names or {}, filename, line)
    if recorded and recorded.rsplit(".", 1)[-1] == name:
        return recorded
    readable = _readable_library_file(filename)
    if readable and line < _first_class_line(readable):
        return name  # no class begins above the line: the enclosing function, if named so, is a plain one
    if readable:
        enclosing = [scope for scope in _scopes(readable) if scope[0] <= line <= scope[1]]
        if enclosing:
            found = max(enclosing, key=lambda scope: scope[0])[2]
            # Another release of the library may be installed here: its name must agree with the frame's.
            if found.rsplit(".", 1)[-1] == name:
                return found
    return name


class _Node:
    __slots__ = ("frame", "bytes", "children")

    def __init__(self, frame: dict | None):
        self.frame, self.bytes, self.children = frame, 0, {}


def _add(root: _Node, frames: list[dict], size: int) -> None:
    root.bytes += size
    node = root
    for frame in frames[:MAX_DEPTH]:
        key = (frame.get("filename"), frame.get("line"))
        child = node.children.get(key)
        if child is None:
            child = node.children[key] = _Node(frame)
        child.bytes += size
        node = child


def _finish(node: _Node, total: int, names: dict) -> list[FrameNode]:
    """The branches of ``node``; a chain of frames that passes all its bytes to one frame below is
    shown as that inner frame, its callers named in the label ("train → … → compute_loss")."""
    children = sorted(node.children.values(), key=lambda child: -child.bytes)
    out = []
    for child in children[:MAX_CHILDREN]:
        if child.bytes < MIN_SHARE * total:
            break
        chain = [frame_label(child.frame, names)]
        while len(child.children) == 1 and next(iter(child.children.values())).bytes == child.bytes:
            child = next(iter(child.children.values()))
            chain.append(frame_label(child.frame, names))
        label = chain[-1] if len(chain) == 1 else f"{chain[0]} → … → {chain[-1]}" if len(chain) > 2 else " → ".join(chain)
        filename = child.frame.get("filename")
        out.append(FrameNode(label=label, path=filename, line=child.frame.get("line"), bytes=child.bytes,
                             children=_finish(child, total, names), local_path=_readable_library_file(filename or "")))
    return out


def _below_user(frames: list[dict], key) -> list[dict]:
    """The frames from just inside the user's line inward (frames come innermost first)."""
    python = [frame for frame in frames if _python(frame)]
    position = next((i for i, frame in enumerate(python) if (frame.get("filename"), frame.get("line")) == key), None)
    inner = python[:position] if position is not None else python
    return [frame for frame in reversed(inner) if _kept(frame)]


def _backward_label(frames: list[dict], role: str | None) -> str:
    if role == "gradients":
        return "gradients (.grad of parameters)"
    for frame in frames:
        found = _BACKWARD_NODE.search(frame.get("name") or "")
        if found:
            return found.group(1)
    return "autograd engine (record with --stacks all to name its functions)"


def library_trees(blocks: list[tuple[int, int, list]], resolver: SourceResolver, roles_of: dict | None = None,
                  user_lines: list | None = None, names: dict | None = None) -> list[FrameNode]:
    """``blocks``: (address, size, frames) live at the moment; ``roles_of``: address -> census role;
    ``user_lines``: the keys (path, line) of the top user lines, largest first."""
    per_line: dict = {}
    backward = _Node(None)
    for address, size, frames in blocks:
        key = frames_key(frames, resolver)
        if key == NO_FRAME:
            label = _backward_label(frames or [], (roles_of or {}).get(address))
            _add(backward, [{"filename": None, "line": None, "name": label}], size)
            continue
        if key[0] is None or resolver.kind(key[0]) != USER:
            continue
        root = per_line.get(key)
        if root is None:
            root = per_line[key] = _Node({"filename": key[0], "line": key[1], "name": ""})
        _add(root, _below_user(frames or [], key), size)
    trees = []
    wanted = [key for key in (user_lines or sorted(per_line, key=lambda k: -per_line[k].bytes)) if key in per_line]
    for key in wanted[:TREES]:
        root = per_line[key]
        library = sum(child.bytes for child in root.children.values())
        if not root.bytes or library < MIN_LIBRARY_SHARE * root.bytes:
            continue
        path, line = key
        label = resolver.place(path, line) if resolver.cell_ref(path) else f"{str(path).replace(chr(92), '/').rsplit('/', 1)[-1]}:{line}"
        trees.append(FrameNode(label=label, path=path, line=line,
                               bytes=root.bytes, children=_finish(root, root.bytes, names or {}),
                               local_path=resolver.local_path(path)))
    if backward.bytes:
        children = [FrameNode(label=child.frame["name"], path=None, line=None, bytes=child.bytes)
                    for child in sorted(backward.children.values(), key=lambda child: -child.bytes)[:MAX_CHILDREN]]
        trees.append(FrameNode(label="no Python frame: the backward pass (autograd engine)", path=None, line=None,
                               bytes=backward.bytes, children=children))
    return trees
