"""File-wide facts gathered in one pass before the rules run: definitions, imports, calls and stores per block.

The index is built per top-level statement group (a chunk, see engine/chunks.py) and merged, so that an edit
re-indexes only the definitions it touched.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..parse.syntax import CHILD_FIELDS, dotted, is_adversarial_attack, is_backward_call, is_optimizer_step
from .gradmode import disables_grad
from .project import ProjectFacts

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class ChunkIndex:
    """What one group of top-level statements contributes to the file's facts (node ids of its own tree)."""

    own_calls: dict[int, list[ast.Call]] = field(default_factory=dict)  # id(stmt) -> calls in its own expressions
    calls_within: dict[int, list[ast.Call]] = field(default_factory=dict)  # id(stmt or scope) -> every call inside
    stores_within: dict[int, list[ast.stmt]] = field(default_factory=dict)  # id(stmt or scope) -> assignments inside
    loops_within: dict[int, list[ast.stmt]] = field(default_factory=dict)  # id(scope) -> for/while loops inside
    module_calls: list[ast.Call] = field(default_factory=list)  # calls of module-level code
    module_stores: list[ast.stmt] = field(default_factory=list)
    module_loops: list[ast.stmt] = field(default_factory=list)
    all_calls: list[ast.Call] = field(default_factory=list)  # nested definitions included
    all_stores: list[ast.stmt] = field(default_factory=list)
    functions: dict[str, ast.AST] = field(default_factory=dict)  # module-level defs (also inside if/try blocks)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    methods: dict[tuple[str, str], ast.AST] = field(default_factory=dict)  # (class, name) -> def
    owner: dict[int, ast.ClassDef] = field(default_factory=dict)  # id(method) -> its class
    parent: dict[int, ast.AST] = field(default_factory=dict)  # id(nested def) -> the function it is defined in
    nested: dict[int, list[ast.AST]] = field(default_factory=dict)  # id(function) -> defs directly inside it
    scopes: list[ast.AST] = field(default_factory=list)  # every function definition, outer ones first
    globals: set[str] = field(default_factory=set)  # names bound at module level
    imports: dict[str, str] = field(default_factory=dict)  # local name -> dotted name it was imported as
    # local name -> (level, module, name) of every import, relative ones too (the project index resolves them)
    import_sources: dict[str, tuple[int, str, str | None]] = field(default_factory=dict)
    grad_off_everywhere: bool = False
    called: frozenset[str] | None = None  # dotted names of the callees, computed when the project index asks


@dataclass
class FileFacts:
    own_calls: dict[int, list[ast.Call]] = field(default_factory=dict)
    calls_within: dict[int, list[ast.Call]] = field(default_factory=dict)
    stores_within: dict[int, list[ast.stmt]] = field(default_factory=dict)
    loops_within: dict[int, list[ast.stmt]] = field(default_factory=dict)
    all_calls: list[ast.Call] = field(default_factory=list)
    all_stores: list[ast.stmt] = field(default_factory=list)
    functions: dict[str, ast.AST] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    methods: dict[tuple[str, str], ast.AST] = field(default_factory=dict)
    owner: dict[int, ast.ClassDef] = field(default_factory=dict)
    parent: dict[int, ast.AST] = field(default_factory=dict)
    nested: dict[int, list[ast.AST]] = field(default_factory=dict)
    scopes: list[ast.AST] = field(default_factory=list)
    globals: set[str] = field(default_factory=set)
    imports: dict[str, str] = field(default_factory=dict)
    import_sources: dict[str, tuple[int, str, str | None]] = field(default_factory=dict)
    project: ProjectFacts | None = None  # what other files of the project say (facts/project.py); None: this file only
    torch_alias: str | None = None  # name under which ``torch`` is imported, if it is
    imported_names: dict[str, str] = field(default_factory=dict)  # local name -> torch.<name> (``from torch import``)
    future_import_end: int = 0  # last line of the docstring / __future__ imports
    grad_off_everywhere: bool = False
    tree: ast.Module | None = None
    _trains: dict[tuple[int, bool], bool] = field(default_factory=dict)
    bindings: dict = field(default_factory=dict)  # containers.is_known_list's index of this analysis' bindings
    _training_calls: set[int] | None = None  # id() of every backward / autograd.grad / optimizer step / attack call
    _all_training_calls: set[int] = field(default_factory=set)  # those and every call of another file's training
    _methods_by_class: dict[int, list[ast.AST]] | None = None

    def calls_of(self, stmt: ast.AST) -> list[ast.Call]:
        return self.own_calls.get(id(stmt), [])

    def calls_inside(self, node: ast.AST) -> list[ast.Call]:
        """Every call in ``node`` (a statement, function or module), nested definitions excluded."""
        return self.calls_within.get(id(node), [])

    def stores_inside(self, node: ast.AST) -> list[ast.stmt]:
        """Assignments and deletions in ``node``, nested definitions excluded."""
        return self.stores_within.get(id(node), [])

    def loops_inside(self, node: ast.AST) -> list[ast.stmt]:
        return self.loops_within.get(id(node), [])

    def calls_within_all(self, node: ast.AST) -> list[ast.Call]:
        """Every call inside a definition, the definitions nested in it included."""
        return [call for inner in self._definitions_in(node) for call in self.calls_inside(inner)]

    def stores_within_all(self, node: ast.AST) -> list[ast.stmt]:
        """Every assignment inside a definition, the definitions nested in it included."""
        return [store for inner in self._definitions_in(node) for store in self.stores_inside(inner)]

    def _definitions_in(self, node: ast.AST):
        """``node`` and the definitions nested in it (a class's methods, a function's inner functions), deepest
        last."""
        yield node
        stack = list(self.nested.get(id(node), ()))
        if isinstance(node, ast.ClassDef):
            stack.extend(m for (owner, _), m in self.methods.items() if owner == node.name)
        while stack:
            inner = stack.pop()
            yield inner
            stack.extend(self.nested.get(id(inner), ()))

    def methods_of(self, cls: ast.ClassDef) -> list[ast.AST]:
        """Every method defined in the class's body (two defs of one name, a property and its setter, both)."""
        if self._methods_by_class is None:
            table: dict[int, list[ast.AST]] = {}
            for scope in self.scopes:
                owner = self.owner.get(id(scope))
                if owner is not None:
                    table.setdefault(id(owner), []).append(scope)
            self._methods_by_class = table
        return self._methods_by_class.get(id(cls), [])

    def class_of(self, func: ast.AST) -> ast.ClassDef | None:
        return self.owner.get(id(func))

    def enclosing_class(self, scope: ast.AST) -> ast.ClassDef | None:
        """The class whose method ``scope`` is, or is nested in (a closure defined inside a method)."""
        current = scope
        while current is not None and not isinstance(current, ast.Module):
            cls = self.class_of(current)
            if cls is not None:
                return cls
            current = self.parent.get(id(current))
        return None

    def trains_directly(self, node: ast.AST, written: bool = False) -> bool:
        """A backward pass, autograd.grad, an optimizer step or an adversarial attack (gradients with respect to the
        inputs) is written inside ``node``, or (unless ``written``) a call of a function or class of another file
        that trains (facts/project.py)."""
        key = (id(node), written)
        known = self._trains.get(key)
        if known is None:
            if self._training_calls is None:  # classify each call once, not once per enclosing block
                trained_elsewhere = self._trained_elsewhere()
                self._training_calls = {id(c) for c in self.all_calls
                                        if is_backward_call(c) or is_optimizer_step(c) or is_adversarial_attack(c)}
                self._all_training_calls = self._training_calls | {
                    id(c) for c in self.all_calls if trained_elsewhere and dotted(c.func) in trained_elsewhere
                }
            training = self._training_calls if written else self._all_training_calls
            known = self._trains[key] = bool(training) and any(id(c) in training for c in self.calls_inside(node))
        return known

    def _trained_elsewhere(self) -> frozenset[str]:
        """Callees, as this file writes them, that train in another file: imported functions and classes, and
        ``self.m`` for a method a class of this file inherits from one of the project's."""
        project = self.project
        if project is None:
            return frozenset()
        inherited = {f"self.{method}" for (_, method), function in project.methods.items() if function.trains}
        return project.training | inherited


_NESTED_BODIES = ("body", "orelse", "finalbody")
_STORES = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete)
_SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _header_roots(stmt: ast.stmt) -> list[ast.AST]:
    """The expressions that belong to the statement itself rather than to the statements nested in it."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, (ast.While, ast.If)):
        return [stmt.test]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in stmt.items]
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return list(stmt.decorator_list)
    if isinstance(stmt, ast.Try) or type(stmt).__name__ in {"TryStar", "Match"}:
        return []
    return [stmt]


# Leaves and markers that never contain a call; skipping them halves the cost of the walk.
_NO_CALLS_INSIDE = (ast.Name, ast.Constant, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.Lambda)
# Node class -> fields to search for calls; leaves and lambdas get none.
_SEARCHED_FIELDS = {cls: fields for cls, fields in CHILD_FIELDS.items() if not issubclass(cls, _NO_CALLS_INSIDE)}


def _calls_in(root: ast.AST, found: list[ast.Call]) -> None:
    """Calls inside ``root`` (lambdas excluded), depth first; the order is the one the rules rely on."""
    fields_of = _SEARCHED_FIELDS
    call, attribute = ast.Call, ast.Attribute
    stack = [root]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        kind = type(node)
        if kind is attribute:  # the commonest inner node: one child, no call of its own
            value = node.value
            if type(value) in fields_of:
                push(value)
            continue
        if kind is call:
            found.append(node)
            func = node.func
            if type(func) in fields_of:
                push(func)
            for item in node.args:
                if type(item) in fields_of:
                    push(item)
            for item in node.keywords:
                value = item.value  # a keyword holds one expression
                if type(value) in fields_of:
                    push(item)
            continue
        for name in fields_of.get(kind, ()):
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if type(item) in fields_of:
                        push(item)
            elif type(value) in fields_of:
                push(value)


def _nested_bodies(stmt: ast.stmt):
    for name in _NESTED_BODIES:
        body = getattr(stmt, name, None)
        if body:
            yield body
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    for case in getattr(stmt, "cases", ()):
        yield case.body


# Statements that hold no expression at all, so no call and no store.
_BARE = (ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal)
_COMPOUND = frozenset({
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While, ast.If, ast.With,
    ast.AsyncWith, ast.Try, *(getattr(ast, name) for name in ("TryStar", "Match") if hasattr(ast, name)),
})
_STORE_TYPES = frozenset(_STORES)
_IMPORTS = (ast.Import, ast.ImportFrom)


class _Indexer:
    """One pass over every statement: calls, stores and loops per block and per scope, definitions, imports."""

    def __init__(self, index: ChunkIndex) -> None:
        self.index = index
        self.function: ast.AST | None = None  # the innermost enclosing function
        self.cls: ast.ClassDef | None = None  # the class whose body is being read (directly)
        self.loops: list[ast.stmt] = []  # loops of the scope being read

    def block(self, stmts: list[ast.stmt], into: list[ast.Call], stores: list[ast.stmt]) -> None:
        index = self.index
        own_calls, calls_within, stores_within = index.own_calls, index.calls_within, index.stores_within
        for stmt in stmts:
            kind = type(stmt)
            if kind in _COMPOUND:
                self.statement(stmt, into, stores)
            elif not isinstance(stmt, _BARE):
                if kind in _IMPORTS:
                    self._note_import(stmt, at_module_level=self.function is None and self.cls is None)
                # A simple statement: its calls are all its own and nothing is nested in it.
                own: list[ast.Call] = []
                _calls_in(stmt, own)
                key = id(stmt)
                own_calls[key] = calls_within[key] = own
                index.all_calls.extend(own)
                into.extend(own)
                if kind in _STORE_TYPES:
                    index.all_stores.append(stmt)
                    stores.append(stmt)
                    stores_within[key] = [stmt]
                else:
                    stores_within[key] = []

    def statement(self, stmt: ast.stmt, into: list[ast.Call], stores: list[ast.stmt]) -> None:
        index = self.index
        own: list[ast.Call] = []
        for root in _header_roots(stmt):
            _calls_in(root, own)
        index.own_calls[id(stmt)] = own
        index.all_calls.extend(own)
        if isinstance(stmt, _FUNCTIONS):
            self._function(stmt, own)
            into.extend(own)
            return
        if isinstance(stmt, ast.ClassDef):
            self._class(stmt, own)
            into.extend(own)
            return
        if isinstance(stmt, _LOOPS):
            self.loops.append(stmt)
        inner = list(own)
        inner_stores: list[ast.stmt] = []
        for body in _nested_bodies(stmt):
            self.block(body, inner, inner_stores)
        index.calls_within[id(stmt)] = inner
        index.stores_within[id(stmt)] = inner_stores
        into.extend(inner)
        stores.extend(inner_stores)

    def _function(self, func: ast.AST, own: list[ast.Call]) -> None:
        index = self.index
        index.scopes.append(func)
        if self.cls is not None:
            index.methods[(self.cls.name, func.name)] = func
            index.owner[id(func)] = self.cls
        elif self.function is not None:
            index.parent[id(func)] = self.function
            index.nested.setdefault(id(self.function), []).append(func)
        else:
            index.functions[func.name] = func
        saved = self.function, self.cls, self.loops
        self.function, self.cls, self.loops = func, None, []
        inner: list[ast.Call] = []
        inner_stores: list[ast.stmt] = []
        try:
            self.block(func.body, inner, inner_stores)
        finally:
            index.loops_within[id(func)] = self.loops
            self.function, self.cls, self.loops = saved
        index.calls_within[id(func)] = inner
        index.stores_within[id(func)] = inner_stores

    def _class(self, cls: ast.ClassDef, own: list[ast.Call]) -> None:
        index = self.index
        if self.function is None:
            index.classes.setdefault(cls.name, cls)
        saved = self.cls, self.loops
        self.cls, self.loops = cls, []
        inner: list[ast.Call] = []
        inner_stores: list[ast.stmt] = []
        try:
            self.block(cls.body, inner, inner_stores)
        finally:
            self.cls, self.loops = saved
        index.calls_within[id(cls)] = inner
        index.stores_within[id(cls)] = inner_stores

    def _note_import(self, stmt: ast.stmt, at_module_level: bool) -> None:
        """Imports anywhere in the file name things the same way; module-level ones win a clash."""
        imports = self.index.imports
        note = imports.__setitem__ if at_module_level else imports.setdefault
        sources = self.index.import_sources
        source = sources.__setitem__ if at_module_level else sources.setdefault
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                local = alias.asname or alias.name.split(".", 1)[0]
                source(local, (0, alias.name if alias.asname else local, None))
        else:
            for alias in stmt.names:
                if alias.name != "*":
                    source(alias.asname or alias.name, (stmt.level, stmt.module or "", alias.name))
                else:  # ``from .metrics import *``: a key no name can have, for the project to look through
                    source(f"{STAR}{stmt.level}:{stmt.module or ''}", (stmt.level, stmt.module or "", None))
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    note(alias.asname, alias.name)
                else:
                    head = alias.name.split(".", 1)[0]
                    note(head, head)
        elif stmt.module and not stmt.level:
            for alias in stmt.names:
                note(alias.asname or alias.name, f"{stmt.module}.{alias.name}")


STAR = "*"  # prefix of the import-source keys of star imports


def _store_targets(node: ast.AST) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [name for target in targets if (name := dotted(target))]


def index_statements(stmts: list[ast.stmt]) -> ChunkIndex:
    """The index of a group of top-level statements."""
    index = ChunkIndex()
    indexer = _Indexer(index)
    indexer.block(stmts, index.module_calls, index.module_stores)
    index.module_loops = indexer.loops
    for stmt in stmts:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            index.globals.update(n for n in _store_targets(stmt) if "." not in n)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.With, ast.If, ast.Try)):
            index.globals.update(n for s in index.stores_within.get(id(stmt), ()) if isinstance(s, (ast.Assign, ast.AnnAssign))
                                 for n in _store_targets(s) if "." not in n)
    index.grad_off_everywhere = any(
        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and disables_grad(stmt.value) for stmt in stmts
    )
    return index


def merge_indexes(indexes: list[ChunkIndex], tree: ast.Module, header_end: int) -> FileFacts:
    """The file's facts from the indexes of its chunks, in file order."""
    facts = FileFacts(tree=tree, future_import_end=header_end)
    module_calls: list[ast.Call] = []
    module_stores: list[ast.stmt] = []
    module_loops: list[ast.stmt] = []
    for index in indexes:
        facts.own_calls.update(index.own_calls)
        facts.calls_within.update(index.calls_within)
        facts.stores_within.update(index.stores_within)
        facts.loops_within.update(index.loops_within)
        facts.all_calls.extend(index.all_calls)
        facts.all_stores.extend(index.all_stores)
        facts.functions.update(index.functions)
        for name, cls in index.classes.items():
            facts.classes.setdefault(name, cls)
        facts.methods.update(index.methods)
        facts.owner.update(index.owner)
        facts.parent.update(index.parent)
        facts.nested.update(index.nested)
        facts.scopes.extend(index.scopes)
        facts.globals |= index.globals
        facts.imports.update(index.imports)
        facts.import_sources.update(index.import_sources)
        facts.grad_off_everywhere |= index.grad_off_everywhere
        module_calls.extend(index.module_calls)
        module_stores.extend(index.module_stores)
        module_loops.extend(index.module_loops)
    facts.calls_within[id(tree)] = module_calls
    facts.stores_within[id(tree)] = module_stores
    facts.loops_within[id(tree)] = module_loops
    for local, qualified in facts.imports.items():
        if qualified == "torch":
            facts.torch_alias = local
        elif qualified.startswith("torch.") and qualified.count(".") == 1:
            facts.imported_names[local] = qualified
    return facts
