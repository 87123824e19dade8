"""One ordered walk over a parsed file that keeps taint state and hands each statement to the rules.

Statements are visited in program order per scope (module, function). Loop bodies are walked
twice, the first time silently, so that values carried from one iteration into the next are
already tainted when the rules look at them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Protocol

from .catalog import check
from .facts import FileFacts
from .edits import Positions
from .findings import Finding, Fix
from .gradmode import decorated_without_grad, with_disables_grad, with_enables_grad
from .syntax import dotted, is_private_decoding_helper, name_words
from .taint import TaintEvaluator, TaintState, is_summary_name

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_MAX_REPLAYED_LOOP_DEPTH = 3  # deeper loops are walked once, to keep the cost linear in practice
_CONTAINER_METHODS = {"append", "extend", "insert", "add", "update", "appendleft", "push", "put"}


@dataclass
class Scope:
    node: ast.AST  # ast.Module or a function definition
    cls: ast.ClassDef | None
    parent: Scope | None = None
    declared_global: set[str] = field(default_factory=set)
    returns_graph: bool = False

    @property
    def name(self) -> str:
        return getattr(self.node, "name", "<module>")


class RuleFamily(Protocol):
    """A rule family implements any of ``check_scope(ctx)``, ``check_statement(stmt, ctx)``, ``check_call(call, ctx)``."""


class LintContext:
    """What a rule sees while the walk stands on one statement."""

    def __init__(self, path: str, text: str, tree: ast.Module, facts: FileFacts) -> None:
        self.path = path
        self.text = text
        self.positions = Positions(text)
        self.tree = tree
        self.facts = facts
        self.findings: dict[tuple[str, int, int], Finding] = {}
        self.scope: Scope = Scope(tree, None)
        self.state = TaintState()
        self.loops: list[ast.AST] = []  # enclosing loops of the current scope, outermost first
        self.blocks: list[ast.AST] = []  # enclosing compound statements and except handlers
        self.handler_depth = 0  # how many of those blocks are except handlers
        self._taint_cache: dict[int, bool] = {}  # valid for the statement being visited
        self.memo: dict = {}  # per-file caches shared by the rules, keyed by (kind, id(node))
        self.evaluator: TaintEvaluator  # set by the walker

    def tainted(self, expr: ast.AST | None) -> bool:
        """Memoised per statement: the rules and the transfer function ask about the same expressions."""
        key = id(expr)
        cached = self._taint_cache.get(key)
        if cached is None:
            state = self.state
            cached = False if expr is None or state.grad_off else self.evaluator._tainted(expr, state)
            self._taint_cache[key] = cached
        return cached

    def report(self, code: str, node: ast.AST, message: str, fixes: tuple[Fix, ...] = (), end: ast.AST | None = None) -> None:
        line, column = self.positions.start(node)
        end_line, end_column = self.positions.end(end or node)
        self.report_span(code, (line, column, end_line, end_column), message, fixes)

    def report_span(self, code: str, span: tuple[int, int, int, int], message: str, fixes: tuple[Fix, ...] = ()) -> None:
        info = check(code)
        line, column, end_line, end_column = span
        finding = Finding(self.path, line, column, end_line, end_column, code, info.rule, info.severity, message, fixes)
        self.findings.setdefault((code, line, column), finding)


class Walker:
    def __init__(self, ctx: LintContext, families: list[RuleFamily]) -> None:
        self.ctx = ctx
        # Only the hooks a family defines are called: this loop runs for every statement and call.
        self.scope_hooks = [f.check_scope for f in families if hasattr(f, "check_scope")]
        self.statement_hooks = [f.check_statement for f in families if hasattr(f, "check_statement")]
        self.call_hooks = [f.check_call for f in families if hasattr(f, "check_call")]
        self.silent = False
        self._return_memo: dict[tuple[int, frozenset[str]], bool] = {}
        ctx.evaluator = TaintEvaluator(ctx.facts, self.returns_graph)

    # -- scopes ---------------------------------------------------------------------------
    def run(self) -> None:
        self._walk_scope(self.ctx.tree, cls=None, grad_off=self.ctx.facts.grad_off_everywhere)

    def _walk_scope(self, node: ast.AST, cls: ast.ClassDef | None, grad_off: bool, seeds: frozenset[str] = frozenset()) -> Scope:
        ctx = self.ctx
        saved = (ctx.scope, ctx.state, ctx.loops, ctx.blocks, ctx.handler_depth)
        if isinstance(node, _SCOPES) and (
            decorated_without_grad(node)
            or ctx.facts.called_only_without_grad(node.name)
            or is_private_decoding_helper(node.name)
        ):
            grad_off = True
        ctx.scope = Scope(node, cls, parent=saved[0] if node is not ctx.tree else None)
        ctx.state = TaintState(grad_off=grad_off)
        ctx.state.names.update(seeds or _activation_parameters(node, cls, ctx.facts))
        ctx.loops, ctx.blocks, ctx.handler_depth = [], [], 0
        try:
            if not self.silent:
                for hook in self.scope_hooks:
                    hook(ctx)
            self._block(node.body)
            return ctx.scope
        finally:
            ctx.scope, ctx.state, ctx.loops, ctx.blocks, ctx.handler_depth = saved

    def returns_graph(self, call: ast.Call, state: TaintState | None = None) -> bool | None:
        """For a call of a function or method defined in this file: does it return graph? Else None.

        The callee is walked with exactly the parameters that receive graph at this call site tainted,
        so ``extend_pe(hidden, self.pe)`` is judged by what it does with each argument.
        """
        func = self._local_callee(call)
        if func is None:
            return None
        tainted_parameters = self._tainted_parameters(func, call, state) if state is not None else frozenset()
        key = (id(func), tainted_parameters)
        if key not in self._return_memo:
            self._return_memo[key] = False  # recursion guard
            was_silent, self.silent = self.silent, True
            try:
                cls = self.ctx.scope.cls if isinstance(call.func, ast.Attribute) else None
                scope = self._walk_scope(func, cls=cls, grad_off=self.ctx.facts.grad_off_everywhere, seeds=tainted_parameters)
            finally:
                self.silent = was_silent
            self._return_memo[key] = scope.returns_graph
        return self._return_memo[key]

    def _tainted_parameters(self, func: ast.AST, call: ast.Call, state: TaintState) -> frozenset[str]:
        params = [a.arg for a in func.args.posonlyargs + func.args.args]
        if isinstance(call.func, ast.Attribute) and params and params[0] in {"self", "cls"}:
            params = params[1:]
        evaluator = self.ctx.evaluator
        tainted = {name for name, arg in zip(params, call.args) if evaluator.tainted(arg, state)}
        tainted.update(kw.arg for kw in call.keywords if kw.arg and evaluator.tainted(kw.value, state))
        return frozenset(tainted)

    def _local_callee(self, call: ast.Call) -> ast.AST | None:
        """``f(...)`` for a module-level ``def f``, ``self.m(...)`` for a method of the current class."""
        func = call.func
        kind = type(func)
        if kind is ast.Name:
            return self.ctx.facts.functions.get(func.id)
        if kind is not ast.Attribute or type(func.value) is not ast.Name or func.value.id != "self":
            return None
        cls = self.ctx.scope.cls
        return None if cls is None else self.ctx.facts.methods.get((cls.name, func.attr))

    # -- statements -----------------------------------------------------------------------
    def _block(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self._statement(stmt)

    def _statement(self, stmt: ast.stmt) -> None:
        ctx = self.ctx
        ctx._taint_cache = {}
        if not self.silent:
            for hook in self.statement_hooks:
                hook(stmt, ctx)
            call_hooks = self.call_hooks
            if call_hooks:
                for call in ctx.facts.own_calls.get(id(stmt), ()):
                    for hook in call_hooks:
                        hook(call, ctx)
        kind = type(stmt)
        visit = _VISITORS.get(kind)
        if visit is None:
            visit = _VISITORS[kind] = getattr(Walker, f"_visit_{kind.__name__}", _no_transfer)
        visit(self, stmt)

    def _visit_FunctionDef(self, stmt: ast.FunctionDef) -> None:
        if not self.silent:
            cls = self.ctx.blocks[-1] if self.ctx.blocks and isinstance(self.ctx.blocks[-1], ast.ClassDef) else None
            self._walk_scope(stmt, cls=cls, grad_off=self.ctx.state.grad_off)

    _visit_AsyncFunctionDef = _visit_FunctionDef

    def _visit_ClassDef(self, stmt: ast.ClassDef) -> None:
        if self.silent:
            return
        self.ctx.blocks.append(stmt)
        try:
            self._block(stmt.body)
        finally:
            self.ctx.blocks.pop()

    def _visit_Assign(self, stmt: ast.Assign) -> None:
        tainted = self.ctx.tainted(stmt.value)
        for target in stmt.targets:
            self._bind(target, stmt.value, tainted)

    def _visit_AnnAssign(self, stmt: ast.AnnAssign) -> None:
        if stmt.value is not None:
            self._bind(stmt.target, stmt.value, self.ctx.tainted(stmt.value))

    def _visit_AugAssign(self, stmt: ast.AugAssign) -> None:
        name = dotted(stmt.target) if not isinstance(stmt.target, ast.Subscript) else None
        if name and self.ctx.tainted(stmt.value):
            self.ctx.state.names.add(self.ctx.state.resolve(name))

    def _visit_Expr(self, stmt: ast.Expr) -> None:
        call = stmt.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            return
        state = self.ctx.state
        receiver = dotted(call.func.value)
        if receiver is None:
            return
        if call.func.attr == "detach_":
            state.names.discard(state.resolve(receiver))
        elif call.func.attr in _CONTAINER_METHODS and any(self.ctx.tainted(arg) for arg in call.args):
            state.names.add(state.resolve(receiver))  # the container now holds graph

    def _visit_Return(self, stmt: ast.Return) -> None:
        if self.ctx.tainted(stmt.value):
            self.ctx.scope.returns_graph = True

    def _visit_Global(self, stmt: ast.Global) -> None:
        self.ctx.scope.declared_global.update(stmt.names)

    def _visit_If(self, stmt: ast.If) -> None:
        self._branches([stmt.body, stmt.orelse], stmt)

    def _visit_Match(self, stmt: ast.AST) -> None:
        self._branches([case.body for case in stmt.cases] + [[]], stmt)

    def _branches(self, bodies: list[list[ast.stmt]], owner: ast.AST) -> None:
        ctx = self.ctx
        entry = ctx.state
        merged: TaintState | None = None
        ctx.blocks.append(owner)
        try:
            for body in bodies:
                ctx.state = entry.copy()
                self._block(body)
                if merged is None:
                    merged = ctx.state
                else:
                    merged.merge(ctx.state)
        finally:
            ctx.blocks.pop()
        ctx.state = merged if merged is not None else entry

    def _visit_For(self, stmt: ast.For) -> None:
        self._loop(stmt)

    _visit_AsyncFor = _visit_For
    _visit_While = _visit_For

    def _loop(self, stmt: ast.AST) -> None:
        ctx = self.ctx
        entry = ctx.state.copy()
        ctx.loops.append(stmt)
        ctx.blocks.append(stmt)
        try:
            # Replay for carried taint; inside a replay, nested loops run once (keeps the cost linear).
            if not self.silent and len(ctx.loops) <= _MAX_REPLAYED_LOOP_DEPTH:
                was_silent, self.silent = self.silent, True
                try:
                    self._loop_iteration(stmt)
                finally:
                    self.silent = was_silent
                ctx.state.merge(entry)
            self._loop_iteration(stmt)
        finally:
            ctx.loops.pop()
            ctx.blocks.pop()
        ctx.state.merge(entry)
        self._block(stmt.orelse)

    def _loop_iteration(self, stmt: ast.AST) -> None:
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._bind(stmt.target, None, self.ctx.tainted(stmt.iter))
        self._block(stmt.body)

    def _visit_With(self, stmt: ast.With) -> None:
        ctx = self.ctx
        saved = ctx.state.grad_off
        if with_disables_grad(stmt):
            ctx.state.grad_off = True
        elif with_enables_grad(stmt):
            ctx.state.grad_off = False
        for item in stmt.items:
            if item.optional_vars is not None:
                self._bind(item.optional_vars, None, False)
        ctx.blocks.append(stmt)
        try:
            self._block(stmt.body)
        finally:
            ctx.blocks.pop()
            ctx.state.grad_off = saved

    _visit_AsyncWith = _visit_With

    def _visit_Try(self, stmt: ast.Try) -> None:
        ctx = self.ctx
        entry = ctx.state.copy()
        ctx.blocks.append(stmt)
        try:
            self._block(stmt.body)
            self._block(stmt.orelse)
            after_body = ctx.state
            for handler in stmt.handlers:
                ctx.state = entry.copy()
                ctx.state.merge(after_body)
                ctx.blocks.append(handler)
                ctx.handler_depth += 1
                try:
                    self._block(handler.body)
                finally:
                    ctx.blocks.pop()
                    ctx.handler_depth -= 1
                after_body.merge(ctx.state)
            ctx.state = after_body
        finally:
            ctx.blocks.pop()
        self._block(stmt.finalbody)

    _visit_TryStar = _visit_Try

    # -- bindings -------------------------------------------------------------------------
    def _bind(self, target: ast.AST, value: ast.AST | None, tainted: bool) -> None:
        state = self.ctx.state
        kind = type(target)
        if kind is ast.Name:
            name = target.id
            source = dotted(value) if type(value) in _NAMED else None
            if source and source != name:
                state.aliases[name] = state.resolve(source)
            else:
                state.aliases.pop(name, None)
            resolved = state.resolve(name)
            if tainted and not is_summary_name(name):
                state.names.add(resolved)
            else:
                state.names.discard(resolved)
                state.names.discard(name)
            return
        if kind is ast.Tuple or kind is ast.List:
            values = value.elts if type(value) in _SEQUENCES and len(value.elts) == len(target.elts) else None
            for index, element in enumerate(target.elts):
                if values is not None:
                    self._bind(element, values[index], self.ctx.tainted(values[index]))
                else:
                    self._bind(element, None, tainted)
            return
        if kind is ast.Starred:
            self._bind(target.value, None, tainted)
            return
        if kind is ast.Subscript:
            if tainted:
                container = dotted(target.value)
                if container:
                    state.names.add(state.resolve(container))
            return
        name = dotted(target)
        if name is None:
            return
        resolved = state.resolve(name)
        if tainted:
            state.names.add(resolved)
        else:
            state.names.discard(resolved)
            state.names.discard(name)


_VISITORS: dict[type, object] = {}
_NAMED = frozenset({ast.Name, ast.Attribute})
_SEQUENCES = frozenset({ast.Tuple, ast.List})


def _no_transfer(walker: Walker, stmt: ast.stmt) -> None:
    """Statements that bind nothing (pass, raise, import...) leave the taint state as it is."""


def _activation_parameters(node: ast.AST, cls: ast.ClassDef | None, facts: FileFacts) -> set[str]:
    """Parameters that receive activations: a module's forward() inputs, and what an image pool is fed."""
    if cls is None or not isinstance(node, _SCOPES):
        return set()
    is_module = cls.name in facts.module_classes
    receives_activations = (node.name == "forward" and is_module) or ("pool" in name_words(cls.name) and not is_module)
    if not receives_activations:
        return set()
    args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    defaults = dict(zip([a.arg for a in (node.args.posonlyargs + node.args.args)][::-1], node.args.defaults[::-1]))
    return {
        arg.arg for arg in args[1:]
        if not isinstance(defaults.get(arg.arg), ast.Constant)
        and not (isinstance(arg.annotation, ast.Name) and arg.annotation.id in {"int", "float", "bool", "str"})
    }
