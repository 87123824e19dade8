"""The project index: per-module summaries of the project's files, and the facts a linted file gets from them.

A module's summary is what the single-file engine knows of its own definitions, computed by the same code:
the module is indexed (facts/file_facts.py) and walked with every rule family (walker/), and each function's
and method's summary (flow/summaries.py: what it returns given what it is passed, what it keeps, what it
detaches) is kept with its parameters; each class keeps its bases as written. Findings of that walk are
dropped: only the linted file is reported on.

Reading is bounded: ``HOPS`` files away from the linted one at most (an imported module is one hop, what it
imports in turn a second), files no larger than the engine checks, and each summary is cached under the file's
(path, mtime_ns, size) and those of the files it was computed from, so that the language server reads a file
again only after it changed. Summaries are also kept on disk (store.py) for the next process; an entry there is
used only while the folders whose listings resolved its imports are unchanged too (a module added since may
change what an import names).
"""

from __future__ import annotations

import ast
import os
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from ..rules.retention.retained_graph import RetainedGraph
from ..facts.file_facts import STAR, ChunkIndex, index_statements, merge_indexes
from ..facts.gradmode import OFF
from ..facts.library import MODULE_BASES
from ..facts.project import ProjectFacts, ProjectFunction, base_names, called_names
from ..parse.source import decode_source, read_source
from ..parse.syntax import dotted, last_name
from ..walker.context import LintContext
from ..walker.walker import Walker
from .resolve import FOLDER, Resolver, Source, Stamp, qualified
from .store import SummaryStore

HOPS = 2  # files away from the linted one that may be read
_MAX_CLASS_DEPTH = 8  # bases followed within the files read
_CACHED_MODULES = 4096  # summaries kept per project
_CACHED_PROJECTS = 8
_PARSED_MODULES = 16  # parsed trees kept per project (a tree takes many times its text's memory)


@dataclass(frozen=True)
class ProjectClass:
    name: str
    bases: tuple[str, ...]  # dotted, as written
    methods: dict[str, ProjectFunction]
    is_module: bool = False  # an nn.Module with parameters of its own whose methods all record (its file's evidence)
    no_grad_call: bool = False  # calling an instance runs its forward (or __call__) with recording off
    trains: bool = False  # one of its methods trains (a trainer, a fitting routine)
    frozen: bool = False  # an nn.Module whose only parameters are made frozen: calling it records nothing of its own


@dataclass
class ModuleSummary:
    path: str
    name: str  # dotted, relative to the root, for messages
    sources: dict[str, Source]  # its own imports
    classes: dict[str, ProjectClass]
    functions: dict[str, ProjectFunction] = field(default_factory=dict)
    depends: dict[str, Stamp] = field(default_factory=dict)  # files its summaries were computed from


class ProjectIndex:
    def __init__(self, root: str | os.PathLike) -> None:
        self.resolver = Resolver(root)
        self.store = SummaryStore(self.resolver.root)
        self._modules: OrderedDict[tuple[str, int], tuple[Stamp, ModuleSummary | None]] = OrderedDict()
        self._building: set[str] = set()
        self._trees: OrderedDict[tuple[str, Stamp], tuple[str, ast.Module, ChunkIndex]] = OrderedDict()
        self.reads = 0  # files read and summarised (the cache's misses), for tests and benchmarks
        self._read_for: dict[str, dict[str, Stamp]] = {}  # linted file -> the files its last facts came from

    @property
    def root(self) -> str:
        return self.resolver.root

    # -- the linted file ---------------------------------------------------------------------
    def facts_for(self, path: str, indexes: list[ChunkIndex], hops: int = HOPS) -> ProjectFacts | None:
        """What the project says about the names the file at ``path`` (its chunks' indexes) imports; None
        when the file is not inside the root."""
        self.resolver.begin()
        importer = os.path.realpath(path)
        if not self.resolver.inside(importer):
            return None
        sources: dict[str, Source] = {}
        classes: dict[str, tuple[str, ...]] = {}
        called: set[str] = set()
        for index in indexes:
            sources.update(index.import_sources)
            for name, cls in index.classes.items():
                classes.setdefault(name, tuple(dotted(b) or "" for b in cls.bases))
            called |= called_names(index)
        used: dict[str, Stamp] = {}
        facts = self._facts(importer, sources, classes, called, hops, used)
        self._read_for[importer] = used
        return facts

    def dependency_stamps(self, path: str) -> tuple:
        """The present (mtime_ns, size) of the files the last facts of ``path`` came from: when they differ
        from the last call's, what other files say may have changed."""
        used = self._read_for.get(os.path.realpath(path), {})
        self.resolver.begin()
        return tuple((p, self.resolver.stamp(p)) for p, recorded in sorted(used.items()) if recorded[1] != FOLDER)

    def _facts(self, importer: str, sources: dict[str, Source], classes: dict[str, tuple[str, ...]],
               called: set[str], hops: int, used: dict[str, Stamp]) -> ProjectFacts:
        facts = ProjectFacts()
        if hops <= 0 or not sources:
            return facts
        self._building.add(importer)
        try:
            here = ModuleSummary(importer, "", sources, {n: ProjectClass(n, b, {}) for n, b in classes.items()})
            for name in classes:
                external: list[str] = []
                chain = self._chain(here, name, hops, used, external)
                projected = [cls for module, cls in chain if module is not here]
                if not projected:
                    continue
                facts.ancestors[name] = tuple(_unique(external))
                for cls in projected:  # nearest first: the method ``self.m()`` runs when no nearer class has one
                    for method, function in cls.methods.items():
                        if f"self.{method}" in called:
                            facts.methods.setdefault((name, method), function)
            module_classes, no_grad_classes, training, frozen = set(), set(), set(), set()
            for callee in called:
                head = callee.split(".", 1)[0]
                if head in sources and head not in classes:
                    target = self._follow(importer, sources, callee, hops, used)
                    if target is None:
                        continue
                    owner, name, left = target
                    if (name in owner.functions and owner.functions[name].trains) or (name in owner.classes and owner.classes[name].trains):
                        training.add(callee)
                    if name in owner.classes:
                        methods: dict[str, ProjectFunction] = {}
                        for _, cls in self._chain(owner, name, left, used, []):  # nearest first
                            for method, function in cls.methods.items():
                                methods.setdefault(method, function)
                        if methods:
                            facts.instance_methods[callee] = methods
                    if name in owner.functions:
                        facts.functions[callee] = owner.functions[name]
                    elif name in owner.classes and owner.classes[name].no_grad_call:
                        no_grad_classes.add(callee)
                    elif name in owner.classes and owner.classes[name].is_module:
                        module_classes.add(callee)
                    elif name in owner.classes and owner.classes[name].frozen:
                        frozen.add(callee)
            facts.module_classes = frozenset(module_classes)
            facts.no_grad_classes = frozenset(no_grad_classes)
            facts.training = frozenset(training)
            facts.frozen_classes = frozenset(frozen)
        finally:
            self._building.discard(importer)
        facts.signature = (
            tuple(sorted(facts.ancestors.items())),
            tuple(sorted((k, _signature(f)) for k, f in facts.functions.items())),
            tuple(sorted((k, _signature(f)) for k, f in facts.methods.items())),
            tuple(sorted(facts.module_classes)),
            tuple(sorted(facts.no_grad_classes)),
            tuple(sorted(facts.training)),
            tuple(sorted(facts.frozen_classes)),
            tuple(sorted((c, m, _signature(f)) for c, ms in facts.instance_methods.items() for m, f in ms.items())),
        )
        return facts

    # -- resolution --------------------------------------------------------------------------
    def _chain(self, module: ModuleSummary, name: str, hops: int, used: dict[str, Stamp], external: list[str],
               depth: int = 0, seen: set | None = None) -> list[tuple[ModuleSummary, ProjectClass]]:
        """The class and the classes it derives from that the files read define, nearest first; the bases of
        those of other files that are no class of the files read go to ``external``, qualified."""
        seen = set() if seen is None else seen
        cls = module.classes.get(name)
        if cls is None or (module.path, name) in seen or depth > _MAX_CLASS_DEPTH:
            return []
        seen.add((module.path, name))
        found = [(module, cls)]
        for base in cls.bases:
            target = self._project_class(module, base, hops, used)
            if target is not None:
                owner, base_name, left = target
                found += self._chain(owner, base_name, left, used, external, depth + 1, seen)
            elif module.name:  # a base the linted file writes is seen by the checks already
                name_there = qualified(base, module.sources)
                if name_there:
                    external.append(name_there)
        return found

    def _project_class(self, module: ModuleSummary, base: str, hops: int,
                       used: dict[str, Stamp]) -> tuple[ModuleSummary, str, int] | None:
        """(the module, the class name, the hops left there) of a base that is a class of the files read."""
        if "." not in base and base in module.classes and base not in module.sources:
            return module, base, hops
        target = self._follow(module.path, module.sources, base, hops, used)
        if target is None:
            return None
        owner, name, left = target
        return (owner, name, left) if name in owner.classes else None

    def _follow(self, importer: str, sources: dict[str, Source], dotted_name: str, hops: int,
                used: dict[str, Stamp]) -> tuple[ModuleSummary, str, int] | None:
        """(the module that defines it, its name there, the hops left there) for a name imported by
        ``importer``; a name a package re-exports (``from .impl import f`` in ``__init__.py``) is followed
        while hops are left."""
        head, *rest = dotted_name.split(".")
        source = sources.get(head)
        if source is None or hops <= 0:
            return None
        located = self.resolver.locate(importer, source, rest, used)
        if located is None:
            return None
        path, names = located
        if len(names) != 1 or path == importer:
            return None
        module = self.module(path, hops - 1, used)
        if module is None:
            return None
        name = names[0]
        if name in module.classes or name in module.functions:
            return module, name, hops - 1
        if name in module.sources:
            return self._follow(module.path, module.sources, name, hops - 1, used)
        for key, star in module.sources.items():  # re-exported by ``from .impl import *``
            if key.startswith(STAR):
                found = self._follow(module.path, {STAR: star}, f"{STAR}.{name}", hops - 1, used)
                if found is not None:
                    return found
        return None

    # -- module summaries ----------------------------------------------------------------------
    def module(self, path: str, hops: int, used: dict[str, Stamp] | None = None) -> ModuleSummary | None:
        """The summary of the module at ``path`` (a real path inside the root), its own imports followed
        ``hops`` files further; cached while it and the files it was computed from are unchanged."""
        stamp = self.resolver.stamp(path)
        if stamp is None or path in self._building:
            return None
        key = (path, hops)
        cached = self._modules.get(key)
        if cached is not None and cached[0] == stamp and _unchanged(cached[1], self.resolver):
            self._modules.move_to_end(key)
            summary = cached[1]
        else:
            summary = self.store.load(path, hops, stamp)
            if summary is None or not _unchanged(summary, self.resolver, folders=True):
                summary = self._summarise(path, stamp, hops)
                if summary is not None:
                    self.store.save(path, hops, stamp, summary)
            self._modules[key] = (stamp, summary)
            if len(self._modules) > _CACHED_MODULES:
                self._modules.popitem(last=False)
        if used is not None:
            used[path] = stamp
            if summary is not None:
                used.update(summary.depends)
        return summary

    def _summarise(self, path: str, stamp: Stamp, hops: int) -> ModuleSummary | None:
        parsed = self._parsed(path, stamp)
        if parsed is None:
            return None
        text, tree, index = parsed
        used: dict[str, Stamp] = {}
        classes = {name: tuple(dotted(b) or "" for b in cls.bases) for name, cls in index.classes.items()}
        project = self._facts(path, index.import_sources, classes, set(called_names(index)), hops, used)
        if hops > 0 and _says_nothing(project):
            # Nothing it imports is known: its summary is the one of the module alone, walked once for both.
            alone = self.module(path, 0)
            return None if alone is None else replace(alone, depends={**alone.depends, **used})
        self.reads += 1
        facts = merge_indexes([index], tree, header_end=-1)
        facts.project = project
        ctx = LintContext(path, text, tree, facts)
        try:
            Walker(ctx, [RetainedGraph()]).run()
        except Exception:  # noqa: BLE001 - another file that the walk cannot take stays unknown; this one is linted
            return None
        finally:
            ctx.evaluator = None
        summaries = ctx.summaries

        may_yield = "yield" in text

        def function(func: ast.AST, qualified_name: str) -> ProjectFunction | None:
            summary = summaries.get(id(func))
            if summary is None or (may_yield and _is_generator(func)):
                return None  # a generator's summary says what it returns, not what iterating it yields
            positional = tuple(ctx.graph.parameters(func))
            keyword = tuple(a.arg for a in func.args.kwonlyargs)
            return ProjectFunction(qualified_name, positional, keyword, summary, _called_parameters(func, facts),
                                   bool(ctx.graph.trains.get(id(func))))

        name = self._module_name(path)
        functions = {n: f for n, func in index.functions.items() if (f := function(func, f"{name}.{n}")) is not None}
        methods: dict[str, dict[str, ProjectFunction]] = {}
        for (owner, method), func in index.methods.items():
            found = function(func, f"{name}.{owner}.{method}")
            if found is not None and index.classes.get(owner) is facts.class_of(func):
                methods.setdefault(owner, {})[method] = found
        classes_found = {n: ProjectClass(n, classes[n], methods.get(n, {}), _records_graph(cls, ctx), _calls_without_grad(cls, ctx),
                                         _trains(cls, ctx), _frozen_module(cls, ctx)) for n, cls in index.classes.items()}
        return ModuleSummary(path, name, dict(index.import_sources), classes_found, functions, used)

    def _parsed(self, path: str, stamp: Stamp) -> tuple[str, ast.Module, ChunkIndex] | None:
        """(text, tree, index) of the module, kept for the few files read last: a module summarised at two
        distances from the linted file is parsed once."""
        key = (path, stamp)
        cached = self._trees.get(key)
        if cached is not None:
            self._trees.move_to_end(key)
            return cached
        try:
            decoded = decode_source(read_source(path))
        except Exception:  # noqa: BLE001 - an unreadable module is unknown, never an error of the linted file
            return None
        if decoded.unreadable:
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(decoded.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        parsed = self._trees[key] = (decoded.text, tree, index_statements(tree.body))
        if len(self._trees) > _PARSED_MODULES:
            self._trees.popitem(last=False)
        return parsed

    def _module_name(self, path: str) -> str:
        relative = os.path.relpath(path, self.root)
        parts = relative[:-3].split(os.sep) if relative.endswith(".py") else relative.split(os.sep)
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts) or os.path.basename(self.root)


def _says_nothing(facts: ProjectFacts) -> bool:
    return not (facts.ancestors or facts.functions or facts.methods or facts.module_classes or facts.no_grad_classes
                or facts.training or facts.frozen_classes)


def _unchanged(summary: ModuleSummary | None, resolver: Resolver, folders: bool = False) -> bool:
    """The files a summary was computed from still have their stamps; with ``folders``, the folders whose listings
    resolved its imports too. A summary kept in memory leaves folders out: an editor saving by renaming changes its
    folder on every save, and a summary of this process is re-read as soon as a file it depends on changes."""
    return summary is None or all(resolver.present(path, stamp) == stamp for path, stamp in summary.depends.items()
                                  if folders or stamp[1] != FOLDER)


def _records_graph(cls: ast.ClassDef, ctx: LintContext) -> bool:
    """An nn.Module by its file's evidence that makes parameters or submodules of its own, none of whose methods
    runs with recording off: calling it records a graph. A module that only holds what it is given (a backend
    running another runtime) or that switches recording off in some methods (``encode_image`` under
    ``inference_mode``) stays unknown: which method an instance's call runs is not followed here."""
    evidence, graph = ctx.evidence, ctx.graph
    if cls.name not in evidence.module_classes or evidence._makes_no_parameters(cls) or not _module_by_bases(cls, ctx.facts):
        return False
    return not any(graph.context.get(id(method)) == OFF for (owner, _), method in ctx.facts.methods.items() if owner == cls.name)


def _frozen_module(cls: ast.ClassDef, ctx: LintContext) -> bool:
    """An nn.Module by its file's evidence and its bases whose only parameters are made frozen (evidence.py)."""
    return cls.name in ctx.evidence.module_classes and _module_by_bases(cls, ctx.facts) and ctx.evidence.frozen_layer(cls)


def _trains(cls: ast.ClassDef, ctx: LintContext) -> bool:
    trains = ctx.graph.trains
    return any(trains.get(id(method)) for (owner, _), method in ctx.facts.methods.items() if owner == cls.name)


def _module_by_bases(cls: ast.ClassDef, facts, depth: int = 0) -> bool:
    """Its bases (through the files read) reach ``nn.Module`` or another module base: not only a ``forward``."""
    for name in base_names(cls, facts):
        if last_name(name) in MODULE_BASES:
            return True
        local = facts.classes.get(name)
        if local is not None and local is not cls and depth < _MAX_CLASS_DEPTH and _module_by_bases(local, facts, depth + 1):
            return True
    return False


def _calls_without_grad(cls: ast.ClassDef, ctx: LintContext) -> bool:
    """Calling an instance runs with recording off: its ``__call__``, or a module's ``forward``, runs so (its
    decorator, its class's own grad-mode context)."""
    graph = ctx.graph
    call = graph.method(cls, "__call__")
    if call is None and cls.name in ctx.evidence.module_classes:
        call = graph.method(cls, "forward")
    return call is not None and graph.context.get(id(call)) == OFF


def _called_parameters(func: ast.AST, facts) -> frozenset[str]:
    """Parameters the function (or a closure of it) calls: ``model(x)``, ``model.forward(x)``."""
    names = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    found = set()
    for call in facts.calls_within_all(func):
        callee = call.func
        if isinstance(callee, ast.Attribute) and callee.attr == "forward":
            callee = callee.value
        if isinstance(callee, ast.Name) and callee.id in names:
            found.add(callee.id)
    return frozenset(found)


def _is_generator(func: ast.AST) -> bool:
    """``yield`` in the function's own body (not in a function nested in it)."""
    stack = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _unique(items) -> list:
    seen: list = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def _signature(function: ProjectFunction) -> tuple:
    return (function.qualified, function.positional, function.keyword, function.summary.signature(),
            tuple(sorted(function.called_parameters)), function.trains)


_INDEXES: OrderedDict[str, ProjectIndex] = OrderedDict()


def project_index(root: str | os.PathLike) -> ProjectIndex:
    """The index of the project at ``root``, shared by every lint of the process (the language server's
    documents, the command line's files)."""
    key = os.path.realpath(root)
    index = _INDEXES.get(key)
    if index is None:
        index = _INDEXES[key] = ProjectIndex(key)
        if len(_INDEXES) > _CACHED_PROJECTS:
            _INDEXES.popitem(last=False)
    else:
        _INDEXES.move_to_end(key)
    return index
