"""What a rule sees while the walk stands on one statement: the file's facts and call graph, the scope being
walked with its taint state, enclosing loops and blocks, and ``report`` (the walker in walker.py moves it)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..facts.evidence import Evidence
from ..facts.file_facts import FileFacts
from ..facts.gradmode import GradModes
from ..facts.project import ProjectFunction
from ..findings import Code, Finding, Fix
from ..flow.callgraph import CallGraph
from ..flow.summaries import EMPTY, GRAPH, Effect, Labels, Summary, parameters_in
from ..flow.taint import TaintEvaluator, TaintState
from ..parse.edits import Positions
from ..parse.syntax import dotted


@dataclass
class Scope:
    node: ast.AST  # ast.Module or a function definition
    cls: ast.ClassDef | None
    parent: Scope | None = None
    declared_global: set[str] = field(default_factory=set)
    summary: Summary = field(default_factory=Summary)
    mode: str | None = None  # the grad mode the whole function runs in (its context)
    escapes: bool = False  # something that may carry graph is kept on an object or a global
    entry_off: bool = False  # recording is off for the whole body

    @property
    def name(self) -> str:
        return getattr(self.node, "name", "<module>")

    @property
    def returns_graph(self) -> bool:
        return GRAPH in self.summary.returns


class LintContext:
    """What a rule sees while the walk stands on one statement."""

    def __init__(self, path: str, text: str, tree: ast.Module, facts: FileFacts, owners: dict | None = None) -> None:
        """``owners``: id(top-level statement or function) -> (index, chunk) when the tree is made of chunks
        parsed apart (engine/chunks.py); positions and findings are then per chunk, relative to its first line."""
        self.path = path
        self.text = text
        self.owners = owners
        self.chunk = 0
        self.positions = Positions(text)
        self.tree = tree
        self.facts = facts
        self.modes = GradModes(facts.functions, facts.classes, tree.body, calls_of=facts.calls_within_all)
        self.evidence = Evidence(facts)
        self.graph = CallGraph(facts, self.evidence, self.modes)
        self.summaries: dict[int, Summary] = {}
        self.findings: dict[tuple[int, str, int, int], Finding] = {}  # (chunk, code, line, column) -> finding
        self.codes: dict[str, Code] = {}  # what the walker's rules may report (set by the walker)
        self.scope: Scope = Scope(tree, None)
        self.state = TaintState()
        self.loops: list[ast.AST] = []  # enclosing loops of the current scope, outermost first
        self.blocks: list[ast.AST] = []  # enclosing compound statements and except handlers
        self.handler_depth = 0  # how many of those blocks are except handlers
        self.line = 0  # the line of the statement being visited
        self._taint_cache: dict[int, Labels] = {}  # valid for the statement being visited
        self.memo: dict = {}  # per-file caches shared by the rules, keyed by (kind, id(node))
        self.evaluator: TaintEvaluator  # set by the walker

    def use_chunk(self, node: ast.AST) -> None:
        """Report positions of the chunk ``node`` was parsed with (no change for a node inside one)."""
        if self.owners:
            owner = self.owners.get(id(node))
            if owner is not None:
                self.chunk, chunk = owner
                self.positions = chunk.positions

    def labels(self, expr: ast.AST | None) -> Labels:
        """Memoised per statement: the rules and the transfer function ask about the same expressions."""
        if expr is None:
            return EMPTY
        key = id(expr)
        cached = self._taint_cache.get(key)
        if cached is None:
            cached = self._taint_cache[key] = self.evaluator.labels(expr, self.state)
        return cached

    def tainted(self, expr: ast.AST | None) -> bool:
        return GRAPH in self.labels(expr)

    def backpropagated_later(self, name: str, stmt: ast.stmt, container: bool = False) -> bool:
        """A backward through ``name`` (``loss.backward()``) comes after ``stmt``, in the same iteration of its
        loop: what ``stmt`` binds there carries graph, whatever computed it. For a ``container`` any backward
        through it in the loop counts: ``losses[i - 1].backward()`` at the top of the body differentiates
        what the previous iteration put there."""
        roots = self.evidence.backward_roots.get(id(self.scope.node))
        if not roots or name not in roots or self.state.grad_off:
            return False
        here = (stmt.lineno, stmt.col_offset)
        loop = self.loops[-1] if self.loops else None
        if loop is None:
            return any(position > here for position in roots[name])
        inside = [p for p in roots[name] if loop.lineno <= p[0] <= (loop.end_lineno or loop.lineno)]
        return any(container or position > here for position in inside)

    def siblings(self, stmt: ast.stmt) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """The statements before and after ``stmt`` in the block that holds it (the innermost enclosing
        compound statement's body, else branch or finally block, or the scope's body)."""
        owner = self.blocks[-1] if self.blocks else self.scope.node
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(owner, field, None) or []
            for index, candidate in enumerate(stmts):
                if candidate is stmt:
                    return stmts[:index], stmts[index + 1:]
        return [], []

    def is_hot_loop(self, loop: ast.AST) -> bool:
        """A loop of the current scope that trains or runs a model over data, many times (flow/contexts.py)."""
        return self.graph.is_hot_loop(loop, self.scope.node)

    def forward_kind(self, call: ast.Call) -> str | None:
        return self.evaluator.forward_kind(call)

    def report(self, code: str, node: ast.AST, message: str, fixes: tuple[Fix, ...] = (), end: ast.AST | None = None) -> None:
        line, column = self.positions.start(node)
        end_line, end_column = self.positions.end(end or node)
        self.report_span(code, (line, column, end_line, end_column), message, fixes)

    def report_span(self, code: str, span: tuple[int, int, int, int], message: str, fixes: tuple[Fix, ...] = (),
                    chunk: int | None = None) -> None:
        """``chunk``: the part of the file whose positions ``span`` is in, when not the one being walked."""
        info = self.codes[code]
        line, column, end_line, end_column = span
        finding = Finding(self.path, line, column, end_line, end_column, code, info.rule, info.severity, message, fixes)
        self.findings.setdefault((self.chunk if chunk is None else chunk, code, line, column), finding)

    def keep_effect(self, value: ast.AST, effect: Effect) -> None:
        """The current function keeps ``value`` in a place that outlives the call: if ``value`` comes from a
        parameter, callers passing graph through that parameter leak it."""
        node = self.scope.node
        if isinstance(node, ast.Module):
            return
        for name in parameters_in(self.labels(value)):
            effects = self.scope.summary.effects.setdefault(name, [])
            if effect not in effects:
                effects.append(effect)

    def project_function(self, call: ast.Call) -> ProjectFunction | None:
        """The function of another file of the project ``call`` runs, when this file does not rebind its name:
        ``accuracy(out, y)`` imported from there, ``metrics.accuracy(...)``, or ``self.shared_step(batch)``
        inherited from a class of the project."""
        project = self.facts.project
        if project is None:
            return None
        name = dotted(call.func)
        if name is None:
            return None
        head, _, attr = name.partition(".")
        if head in {"self", "cls"}:
            cls = self.facts.enclosing_class(self.scope.node)
            found = project.methods.get((cls.name, attr)) if cls is not None and "." not in attr else None
        else:
            found = project.functions.get(name)
            if found is None or head in self.facts.functions or head in self.facts.classes or head in self.facts.globals \
                    or head in self._bound_here():
                return None
        if found is not None and not found.binds(call):
            return None  # an argument the summary does not cover (``**kwargs``): unknown here
        if found is not None and found.called_parameters and self._passes_callable(call, found):
            return None  # its summary was computed without knowing it is handed a module: unknown here
        return found

    def project_forward(self, call: ast.Call) -> ProjectFunction | None:
        """The method of an instance of a class of another file of the project that ``call`` runs: ``decoder(x)``
        its ``forward``, ``self.crf.decode(x)`` its ``decode``, where every binding of the instance here builds that
        same class (``decoder = DecoderWithAttention(...)``) and the project read the method; its summary says what
        the call returns (at each position of the tuple)."""
        project = self.facts.project
        if project is None or not project.instance_methods or not isinstance(call.func, (ast.Name, ast.Attribute)):
            return None
        name = dotted(call.func)
        if name is None:
            return None
        for receiver, method in ((name, "forward"), tuple(name.rsplit(".", 1)) if "." in name else (None, None)):
            if receiver is None or ("." in receiver and not (receiver.startswith("self.") and receiver.count(".") == 1)):
                continue
            built = self._only_instance_of(receiver, self.scope.node)
            found = built.get(method) if built else None
            if found is not None:
                return found if found.binds(call) else None
        return None

    def _only_instance_of(self, name: str, scope: ast.AST, depth: int = 0) -> dict[str, ProjectFunction] | None:
        """The methods of the one class of another file of the project that every binding of ``name`` in ``scope``
        builds (``name = Cls(...)``, its only form of binding there); a parameter's, from what every call site of this
        file passes it (two calls up at most). None when any binding is another or unknown."""
        key = ("only-instance", name, id(scope))
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = None  # recursion guard
        found = None
        if name.startswith("self."):
            cls = self.facts.enclosing_class(scope)
            found = self._built_only_by_calls(name, [cls]) if cls is not None else None
        elif not isinstance(scope, ast.Module) and name in self.graph.parameters(scope, bound=False):
            found = self._passed_by_every_caller(name, scope, depth)
        elif not isinstance(scope, ast.Module) and name in self.evidence._locals_of(scope):
            found = self._built_only_by_calls(name, [scope])
        else:
            found = self._built_only_by_calls(name, [self.tree])
        self.memo[key] = found
        return found

    def _passed_by_every_caller(self, name: str, scope: ast.AST, depth: int) -> dict[str, ProjectFunction] | None:
        sites = self.graph.callers_of(scope)
        if not sites or depth >= 2:
            return None
        found = None
        for site in sites:
            passed = dict(self.graph.bound_arguments(site)).get(name)
            argument = dotted(passed) if passed is not None else None
            built = self._only_instance_of(argument, site.caller, depth + 1) if argument else None
            if built is None or (found is not None and built is not found):
                return None
            found = built
        return found

    def _built_only_by_calls(self, name: str, places: list[ast.AST]) -> dict[str, ProjectFunction] | None:
        """The methods of the project class that every binding of ``name`` in ``places`` builds, when each is
        ``name = Cls(...)`` of one and the same class of another file of the project."""
        methods = self.facts.project.instance_methods
        found = None
        for place in places:
            for loop in self.facts.loops_inside(place):
                if isinstance(loop, (ast.For, ast.AsyncFor)) and name in {dotted(n) for n in ast.walk(loop.target)}:
                    return None
            # a class's attribute is bound in any of its methods
            stores = self.facts.stores_within_all(place) if isinstance(place, ast.ClassDef) else self.facts.stores_inside(place)
            for store in stores:
                targets = store.targets if isinstance(store, (ast.Assign, ast.Delete)) else [getattr(store, "target", None)]
                if not any(name in {dotted(n) for n in ast.walk(t)} for t in targets if t is not None):
                    continue
                if not (isinstance(store, ast.Assign) and len(targets) == 1 and dotted(targets[0]) == name
                        and isinstance(store.value, ast.Call)):
                    return None  # bound some other way too
                built = methods.get(dotted(store.value.func) or "")
                if built is None or (found is not None and built is not found):
                    return None
                found = built
        return found

    def keeps_nothing_given(self, call: ast.Call) -> bool:
        """``meter.update(x)`` where every binding of ``meter`` here builds the same class of another file of the
        project (``meter = Accuracy()``) and the method the project read for it keeps none of what the call passes
        (it reduces to ``.item()``): the object holds no graph of it."""
        project = self.facts.project
        if project is None or not project.instance_methods or not isinstance(call.func, ast.Attribute):
            return False
        receiver = dotted(call.func.value)
        if receiver is None:
            return False
        methods = [built.get(call.func.attr) for built in self._built_from(receiver)]
        method = methods[0] if methods else None
        if method is None or any(m is not method for m in methods):
            return False  # built from another class too, or from one whose method the project does not know
        return method.binds(call) and method.keeps_nothing_of(call)

    def _built_from(self, receiver: str) -> tuple[dict[str, ProjectFunction], ...]:
        """For each binding of ``receiver`` to a call in the current scope (its class's methods for ``self.x``, else
        the function and the module), the methods of the class of another file it builds ({} for any other call)."""
        cls = self.scope.cls
        places = [cls] if receiver.startswith("self.") and cls is not None else [self.scope.node, self.tree]
        key = ("built-from", id(places[0]), receiver)
        found = self.memo.get(key)
        if found is None:
            methods = self.facts.project.instance_methods
            found = self.memo[key] = tuple(
                methods.get(dotted(store.value.func) or "", {}) for place in places for store in self.facts.stores_inside(place)
                if isinstance(store, ast.Assign) and isinstance(store.value, ast.Call) and any(dotted(t) == receiver for t in store.targets))
        return found

    def _passes_callable(self, call: ast.Call, function: ProjectFunction) -> bool:
        """The call hands a module (or a pipeline that runs without grad) to a parameter the function calls."""
        scope = self.scope.node
        evidence = self.evidence
        return any(parameter in function.called_parameters and (evidence.is_module(argument, scope) or evidence.is_no_grad_callable(argument, scope))
                   for parameter, argument in function.bound_arguments(call))

    def _bound_here(self) -> frozenset[str]:
        """Names the current function binds itself (its parameters, its assignments): they hide an import."""
        node = self.scope.node
        if isinstance(node, ast.Module):
            return frozenset()
        key = ("bound-names", id(node))
        found = self.memo.get(key)
        if found is None:
            names = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
            names.update(n for n in (node.args.vararg, node.args.kwarg) if n is not None for n in [n.arg])
            for store in self.facts.stores_inside(node):
                targets = store.targets if isinstance(store, (ast.Assign, ast.Delete)) else [store.target]
                names.update(t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name))
            found = self.memo[key] = frozenset(names)
        return found

    def qualified_name(self, func: ast.AST) -> str:
        cls = self.facts.class_of(func)
        return f"{cls.name}.{func.name}" if cls is not None else getattr(func, "name", "<module>")
