"""A file as a sequence of chunks: groups of top-level statements parsed and indexed on their own.

A chunk is one top-level definition (with its decorators), a run of imports, or a run of other
module-level code. It starts at a line that begins a top-level statement (a line starting in column 0 with
code, not a continuation, not ``else:``/``except:``/..., not inside a triple-quoted string, not right after a
decorator). Each chunk is parsed alone, with line numbers counted from its own first line, and kept in
a cache keyed by its text: after an edit only the chunks whose text changed are parsed and indexed again.
If the cut between chunks was wrong (a parse that fails alone although the file parses), the file is
parsed whole once and cut where its statements really start; those cuts are remembered for next time.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass, field

from ..facts.file_facts import ChunkIndex, index_statements
from ..parse.edits import Positions
from ..parse.syntax import iter_nodes

_CONTINUATIONS = re.compile(r"(else|elif|except|finally|case)\b")
_TRIPLE = re.compile(r'"""|\'\'\'')
_MAX_CACHED = 4096


@dataclass
class Chunk:
    text: str
    start: int  # the file's line number of the chunk's first line (1-based)
    tree: ast.Module  # line numbers relative to the chunk (its first line is line 1)
    index: ChunkIndex
    positions: Positions
    header: bool  # imports, the docstring and __future__ lines only: shared by every part of the file
    names: list  # [defines, uses] once asked for (shared with the cache); a lint without a cache never asks

    @property
    def defines(self) -> frozenset[str]:
        """Names the chunk binds at module level (defs, classes, assignments, imports)."""
        return self._names()[0]

    @property
    def uses(self) -> frozenset[str]:
        """Names it reads before binding them."""
        return self._names()[1]

    def _names(self) -> list:
        if not self.names:
            self.names.extend(_names(self.tree))
        return self.names

    def absolute(self, line: int) -> int:
        return line + self.start - 1


@dataclass
class ParsedFile:
    chunks: list[Chunk] = field(default_factory=list)
    error: SyntaxError | None = None


class ChunkCache:
    """Parsed and indexed chunks by text, for one document (the language server keeps one per file)."""

    def __init__(self) -> None:
        self._chunks: dict[str, tuple] = {}
        self.not_starts: set[str] = set()  # line texts that looked like statement starts but were not
        self.results: dict = {}  # analysis results by component key (driver.py)

    def get(self, text: str):
        return self._chunks.get(text)

    def put(self, text: str, value: tuple) -> None:
        if len(self._chunks) >= _MAX_CACHED:
            self._chunks.clear()
        self._chunks[text] = value

    def keep_only(self, texts: set[str]) -> None:
        """Forget chunks no longer in the document (bounded memory across a long editing session)."""
        if len(self._chunks) > 2 * len(texts) + 64:
            self._chunks = {t: v for t, v in self._chunks.items() if t in texts}


def _parse(text: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences and the like are not our findings
        return ast.parse(text)


_CANDIDATE = re.compile(r"^(?=[^\s#)\]}])", re.MULTILINE)
_DEFINITION = re.compile(r"(async\s+def|def|class)\s|@")
_IMPORT = re.compile(r"(import|from)\s")


def split_lines(text: str, not_starts: set[str]) -> list[int]:
    """0-based indexes of the lines where a new top-level statement may start."""
    strings = _string_spans(text)
    starts: list[int] = []
    line = 0
    last = 0
    span = 0
    previous_kind = ""  # the file's first statement starts a chunk
    decorating = False  # between a decorator that starts a chunk and the def or class it decorates
    for match in _CANDIDATE.finditer(text):
        position = match.start()
        line += text.count("\n", last, position)
        last = position
        while span < len(strings) and strings[span][1] < position:
            span += 1
        if span < len(strings) and strings[span][0] < position:
            continue  # inside a triple-quoted string
        end = text.find("\n", position)
        content = text[position:] if end < 0 else text[position:end]
        if content in not_starts or _CONTINUATIONS.match(content):
            continue
        previous = _previous_code(text, position)
        if (previous.startswith("@") and previous not in not_starts) or previous.endswith("\\"):
            decorating = decorating and content.startswith("@")
            continue  # a decorated definition starts at its first decorator
        if decorating and _DEFINITION.match(content):
            decorating = content.startswith("@")  # a multi-line decorator's next decorator, or the definition
            continue
        kind = "definition" if _DEFINITION.match(content) else "import" if _IMPORT.match(content) else "code"
        decorating = content.startswith("@")
        if kind == previous_kind and kind != "definition":
            continue  # a run of imports, or of module-level code, stays one chunk
        previous_kind = kind
        starts.append(line)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    return starts


def _string_spans(text: str) -> list[tuple[int, int]]:
    """Where triple-quoted strings run (a cheap scan: quotes inside comments or other strings may fool it;
    a wrong cut is caught when the chunk does not parse)."""
    spans = []
    opening: tuple[str, int] | None = None
    for match in _TRIPLE.finditer(text):
        if opening is None:
            opening = (match.group(), match.start())
        elif match.group() == opening[0]:
            spans.append((opening[1], match.end()))
            opening = None
    if opening is not None:
        spans.append((opening[1], len(text)))
    return spans


def _previous_code(text: str, position: int) -> str:
    """The last line before ``position`` that holds code (not blank, not only a comment)."""
    end = position - 1
    while end > 0:
        begin = text.rfind("\n", 0, end) + 1
        line = text[begin:end].rstrip()
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#"):
            return line
        end = begin - 1
    return ""


def parse_file(text: str, cache: ChunkCache, whole: bool = False) -> ParsedFile:
    """The file's chunks (parsed and indexed, from the cache where their text is unchanged); ``whole``: the file
    as one chunk, for a lint that keeps nothing for the next (cutting it would only cost time)."""
    if whole:
        chunk = _chunk(text, 1, cache)
        return ParsedFile(error=chunk) if isinstance(chunk, SyntaxError) else ParsedFile([chunk])
    lines = text.split("\n")
    starts = split_lines(text, cache.not_starts)
    pieces = _pieces(lines, starts)
    chunks = []
    for start, piece in pieces:
        chunk = _chunk(piece, start, cache)
        if isinstance(chunk, SyntaxError):
            return _reparse_whole(text, lines, cache)
        chunks.append(chunk)
    cache.keep_only({c.text for c in chunks})
    return ParsedFile(chunks)


def _pieces(lines: list[str], starts: list[int]) -> list[tuple[int, str]]:
    ends = starts[1:] + [len(lines)]
    return [(begin + 1, "\n".join(lines[begin:end]) + ("\n" if end < len(lines) else "")) for begin, end in zip(starts, ends)]


def _reparse_whole(text: str, lines: list[str], cache: ChunkCache) -> ParsedFile:
    """A chunk did not parse alone: find out from the whole file whether it is a real syntax error or a
    wrong cut, and if the latter, cut where the statements really start."""
    try:
        tree = _parse(text)
    except SyntaxError as error:
        return ParsedFile(error=error)
    real = sorted({min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", ()))]) - 1 for s in tree.body} | {0})
    guessed = split_lines(text, cache.not_starts)
    cache.not_starts.update(lines[i] for i in set(guessed) - set(real) if i < len(lines))
    chunks = []
    for start, piece in _pieces(lines, real):
        chunk = _chunk(piece, start, cache)
        if isinstance(chunk, SyntaxError):  # cannot happen for real statement starts; parse whole instead
            return ParsedFile(error=chunk)
        chunks.append(chunk)
    return ParsedFile(chunks)


def _chunk(text: str, start: int, cache: ChunkCache) -> Chunk | SyntaxError:
    known = cache.get(text)
    if known is None:
        try:
            tree = _parse(text)
        except SyntaxError as error:
            return error
        index = index_statements(tree.body)
        header = all(_is_header(stmt, i) for i, stmt in enumerate(tree.body))
        known = (tree, index, Positions(text), header, [])
        cache.put(text, known)
    tree, index, positions, header, names = known
    return Chunk(text, start, tree, index, positions, header, names)


def _is_header(stmt: ast.stmt, position: int) -> bool:
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return True
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _names(tree: ast.Module) -> tuple[frozenset[str], frozenset[str]]:
    """Names bound at module level by these statements, and the names they read that they do not bind
    themselves first (a definition's free names; module-level code's names used before it assigns them)."""
    defines: set[str] = set()
    uses: set[str] = set()
    bound: set[str] = set()  # bound so far by this chunk's module-level code
    for stmt in tree.body:
        kind = type(stmt)
        loads, stores = _loads_and_stores(stmt)
        if kind in _DEFINITIONS:
            defines.add(stmt.name)
            uses |= loads - stores
        elif kind in (ast.Import, ast.ImportFrom):
            defines.update((a.asname or a.name).split(".", 1)[0] for a in stmt.names)
        else:
            exposed = loads - bound
            if kind in (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.If, ast.Try):
                exposed -= stores  # names a block assigns for its own use (loop variables, results)
            uses |= exposed
            defines |= stores
            bound |= stores
    return frozenset(defines), frozenset(uses)


def _loads_and_stores(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    """Names read and names bound inside a statement (parameters and nested definitions count as bound)."""
    loads: set[str] = set()
    stores: set[str] = set()
    load = ast.Load
    for node in iter_nodes(stmt):
        kind = type(node)
        if kind is ast.Name:
            (loads if type(node.ctx) is load else stores).add(node.id)
        elif kind is ast.arg:
            stores.add(node.arg)
        elif kind in _DEFINITIONS and node is not stmt:
            stores.add(node.name)
    return loads, stores
