"""Ordered walks over a parsed file that keep taint state and hand each statement to the rules.

Functions are walked once each, callees before callers (the call graph's bottom-up order), so that a
call of a function of this file is judged by that function's summary: what it returns given what it
is passed, and which arguments it keeps. Module-level code is walked last. Loop bodies are walked
twice, the first time silently, so that values carried from one iteration into the next are already
tainted when the rules look at them.
"""

from __future__ import annotations

import ast

from ..facts.forwards import FORWARD
from ..facts.gradmode import OFF, ON
from ..flow.summaries import EMPTY, GRAPH, GRAPH_ONLY, MAYBE_GRAPH, Labels, Summary, computed, parameter_label, parameters_in
from ..flow.origins import Origin, Origins, dict_values, makes_dict
from ..flow.taint import CLEAN_METHODS, TaintEvaluator, TaintState, constant_key, is_summary_name
from ..parse.syntax import annotation_words, base_dotted, dotted, is_private_decoding_helper, name_words, scalar_isinstance, statically_false
from .context import LintContext, Scope
from .rule import Rule

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_MAX_REPLAYED_LOOP_DEPTH = 3  # deeper loops are walked once, to keep the cost linear in practice
_CONTAINER_METHODS = {"append", "extend", "insert", "add", "update", "appendleft", "push", "put", "setdefault"}


class Walker:
    def __init__(self, ctx: LintContext, rules: list[Rule]) -> None:
        self.ctx = ctx
        ctx.codes = {code.code: code for rule in rules for code in rule.codes}
        # Only the hooks a rule defines are called (rule.py): this loop runs for every statement and call.
        self.scope_hooks = [r.check_scope for r in rules if hasattr(r, "check_scope")]
        self.finish_hooks = [r.finish_scope for r in rules if hasattr(r, "finish_scope")]
        self.statement_hooks = [r.check_statement for r in rules if hasattr(r, "check_statement")]
        self.call_hooks = [r.check_call for r in rules if hasattr(r, "check_call")]
        self.kept_argument_hooks = [r.check_kept_argument for r in rules if hasattr(r, "check_kept_argument")]
        self.silent = False
        ctx.evaluator = TaintEvaluator(ctx.facts, ctx.evidence, self.local_result, self._forward_returns_nothing)

    # -- scopes ---------------------------------------------------------------------------
    def run(self) -> None:
        ctx = self.ctx
        order = ctx.graph.bottom_up()
        for func in order:
            if id(func) in ctx.graph.recursive:
                # Recursion: start from "returns nothing" and walk once silently, so that the real walk
                # sees the least fixed point (``repackage_hidden`` detaches at the bottom of its recursion).
                ctx.summaries.setdefault(id(func), Summary())
                was_silent, self.silent = self.silent, True
                try:
                    self.walk_function(func, inherited_off=False)
                finally:
                    self.silent = was_silent
            self.walk_function(func, inherited_off=False)
        self.walk_module()

    def walk_module(self) -> None:
        ctx = self.ctx
        self._enter(ctx.tree, None, ctx.facts.grad_off_everywhere, {}, None)

    def walk_function(self, func: ast.AST, inherited_off: bool) -> None:
        ctx = self.ctx
        ctx.use_chunk(func)
        cls = ctx.facts.class_of(func)
        mode = ctx.graph.context.get(id(func))
        grad_off = (
            inherited_off or mode == OFF or ctx.facts.grad_off_everywhere or is_private_decoding_helper(func.name)
        )
        annotations = {a.arg: a.annotation for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
        seeds = {
            p: frozenset({parameter_label(p)}) for p in ctx.graph.parameters(func)
            if not non_tensor_annotation(annotations.get(p))
        }
        for name in _activation_parameters(func, cls, ctx):
            seeds[name] = seeds.get(name, EMPTY) | GRAPH_ONLY
        scope = self._enter(func, cls, grad_off, seeds, mode)
        ctx.summaries[id(func)] = scope.summary

    def _enter(self, node: ast.AST, cls: ast.ClassDef | None, grad_off: bool, seeds: dict, mode: str | None) -> Scope:
        ctx = self.ctx
        saved = (ctx.scope, ctx.state, ctx.loops, ctx.blocks, ctx.handler_depth, ctx.evaluator.scope)
        ctx.scope = Scope(node, cls, parent=saved[0] if node is not ctx.tree else None, mode=mode, entry_off=grad_off)
        ctx.state = TaintState(values=dict(seeds), grad_off=grad_off)
        ctx.loops, ctx.blocks, ctx.handler_depth = [], [], 0
        ctx.evaluator.scope = node
        try:
            if not self.silent:
                for hook in self.scope_hooks:
                    hook(ctx)
            self._block(node.body)
            if not self.silent:
                for hook in self.finish_hooks:
                    hook(ctx)
            return ctx.scope
        finally:
            ctx.scope, ctx.state, ctx.loops, ctx.blocks, ctx.handler_depth, ctx.evaluator.scope = saved

    def local_result(self, call: ast.Call, state: TaintState, position: int | None = None) -> Labels | None:
        """The labels a call of a function of this file (or of another file of the project) returns (at
        ``position`` of the tuple it returns), from its summary; None when unknown."""
        summary, arguments = self._callee_summary(call, constructor=False)
        if summary is None:
            return None  # not a function known here, or not walked yet (recursion): judged like any other call
        returned = summary.returns
        if position is not None:
            if summary.elements is None or position >= len(summary.elements):
                return None
            returned = summary.elements[position]
        if state.grad_off:
            returned = returned - GRAPH_ONLY
        result = frozenset(label for label in returned if label[0] != "@")
        wanted = set(parameters_in(returned))
        if wanted:
            evaluator = self.ctx.evaluator
            for parameter, argument in arguments():
                if parameter in wanted:
                    labels = evaluator.labels(argument, state)
                    if labels:
                        result = result | labels
        return result

    # -- where graph went into a dict (flow/origins.py) ----------------------------------------
    def origins_of(self, value: ast.AST | None, position: int | None = None) -> Origins | None:
        """Where graph-carrying values went into the dict ``value`` holds (at ``position`` of the tuple a call
        returns); None when ``value`` is not a dict this walk follows."""
        if value is None:
            return None
        if type(value) is ast.Name:
            return self.ctx.state.origins.get(value.id) if position is None else None
        if makes_dict(value):
            return frozenset().union(*(self._put_into_dict(part) for part in dict_values(value)))
        if type(value) is ast.Call:
            site = self.ctx.graph.site_of.get(id(value))  # a function of this file: its positions are ours
            summary = self.ctx.summaries.get(id(site.callee)) if site is not None and site.callee.name != "__init__" else None
            if summary is not None and position in summary.origins:
                return summary.origins[position]
        return None

    def _put_into_dict(self, value: ast.AST) -> Origins:
        """What putting ``value`` into a dict brings: the places of a dict it is, else itself if it carries graph."""
        inner = self.origins_of(value)
        if inner is not None:
            return inner
        if GRAPH not in self.ctx.labels(value):
            return frozenset()
        positions = self.ctx.positions
        (line, column), (end_line, end_column) = positions.start(value), positions.end(value)
        return frozenset({Origin(self.ctx.chunk, line, column, end_line, end_column, positions.segment(value))})

    def _follow_dict(self, name: str, origins: Origins | None) -> None:
        """Follow the dict ``name`` now holds, unless a backward reads it here (``log = {"loss": loss}; return log``
        from a training step): then its tensors need their graph, and the line to change is where it is kept."""
        ctx = self.ctx
        if origins is None or name in ctx.evidence.backward_roots.get(id(ctx.scope.node), ()):
            self.ctx.state.origins.pop(name, None)
        else:
            self.ctx.state.origins[name] = origins

    def _forward_elements(self, call: ast.Call) -> tuple[Labels, ...] | None:
        """What each position of the tuple holds that the forward ``call`` runs returns, when that forward is a
        module class's of this file, or of another file of the project that built the instance called, and always
        returns a tuple of one length; None otherwise."""
        forward = self.ctx.graph.forward_of.get(id(call))
        if forward is None:
            elsewhere = self.ctx.project_forward(call) if self.ctx.forward_kind(call) == FORWARD else None
            return elsewhere.summary.elements if elsewhere is not None and not elsewhere.trains else None
        summary = self.ctx.summaries.get(id(forward))
        return summary.elements if summary is not None else None

    def _forward_returns_nothing(self, call: ast.Call) -> bool:
        """``call`` runs the forward of a module class of this file, or of another file of the project that built
        the instance called, and no return of that forward holds anything that may carry graph (a CRF decoder
        handing back lists of ints); the same test as a clean position of a forward's tuple. A forward that trains
        (an explainer fitting its masks by backward passes) needs recording on whatever it returns: not this."""
        forward = self.ctx.graph.forward_of.get(id(call))
        if forward is not None:
            summary = None if self.ctx.graph.trains.get(id(forward)) else self.ctx.summaries.get(id(forward))
        else:
            elsewhere = self.ctx.project_forward(call)
            summary = elsewhere.summary if elsewhere is not None and not elsewhere.trains else None
        return summary is not None and not summary.returns

    def _clean_forward_position(self, call: ast.Call, position: int) -> Labels | None:
        """EMPTY when ``call`` runs the forward of a module class of this file whose every return has, at
        ``position``, nothing that may carry graph (a dict of ``.item()`` floats beside the loss); None otherwise:
        the forward's own labels are no more than a guess about what the network computes."""
        elements = self._forward_elements(call)
        if elements is None or position >= len(elements):
            return None
        return EMPTY if not elements[position] else None

    def _positions(self, call: ast.Call, state: TaintState) -> list[Labels]:
        """What each position of the tuple a function of this file returns may hold, for this call; [] when
        it does not always return a tuple of one length."""
        summary, _ = self._callee_summary(call, constructor=False)
        if summary is None:
            elements = self._forward_elements(call)
            if elements is None:
                return []
            whole = self.ctx.labels(call)
            return [EMPTY if not part else whole for part in elements]
        if summary is None or summary.elements is None:
            return []
        parts = [self.local_result(call, state, index) for index in range(len(summary.elements))]
        return [] if any(part is None for part in parts) else parts

    # -- statements -----------------------------------------------------------------------
    def _block(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self._statement(stmt)

    def _statement(self, stmt: ast.stmt) -> None:
        ctx = self.ctx
        ctx._taint_cache = {}
        ctx.line = stmt.lineno
        if ctx.owners is not None and ctx.scope.node is ctx.tree:
            ctx.use_chunk(stmt)
        if not self.silent:
            for hook in self.statement_hooks:
                hook(stmt, ctx)
            call_hooks = self.call_hooks
            for call in ctx.facts.own_calls.get(id(stmt), ()):
                for hook in call_hooks:
                    hook(call, ctx)
                self._call_effects(call)
        kind = type(stmt)
        visit = _VISITORS.get(kind)
        if visit is None:
            visit = _VISITORS[kind] = getattr(Walker, f"_visit_{kind.__name__}", _no_transfer)
        visit(self, stmt)

    def _callee_summary(self, call: ast.Call, constructor: bool = True):
        """(the callee's summary, a function giving its (parameter, argument) pairs) for a call of a function of
        this file, else of a function of another file of the project (facts/project.py); (None, None) otherwise.
        ``constructor``: a class's ``__init__`` counts (what it keeps), not for what the call returns."""
        ctx = self.ctx
        site = ctx.graph.site_of.get(id(call))
        if site is not None:
            if not constructor and site.callee.name == "__init__":
                return None, None
            return ctx.summaries.get(id(site.callee)), lambda: ctx.graph.bound_arguments(site)
        function = ctx.project_function(call)
        if function is None:
            return None, None
        return function.summary, lambda: function.bound_arguments(call)

    def _call_effects(self, call: ast.Call) -> None:
        """A call of a function of this file that keeps one of its arguments: report graph passed to it, and
        pass the effect on to the current function's own parameters."""
        ctx = self.ctx
        summary, arguments = self._callee_summary(call)
        if summary is None or not summary.effects:
            return
        for parameter, argument in arguments():
            for effect in summary.effects.get(parameter, ()):
                labels = ctx.labels(argument)
                if GRAPH in labels:
                    for hook in self.kept_argument_hooks:
                        hook(call, argument, effect, ctx)
                if parameters_in(labels):
                    ctx.keep_effect(argument, effect)

    def _visit_FunctionDef(self, stmt: ast.FunctionDef) -> None:
        if self.silent or isinstance(self.ctx.scope.node, ast.Module) or self.ctx.facts.class_of(stmt) is not None:
            return  # module-level functions and methods are walked on their own, callees first
        self.walk_function(stmt, inherited_off=self.ctx.state.grad_off)

    _visit_AsyncFunctionDef = _visit_FunctionDef

    def _visit_Assign(self, stmt: ast.Assign) -> None:
        ctx = self.ctx
        labels = ctx.labels(stmt.value)
        for target in stmt.targets:
            self._bind(target, stmt.value, labels)
        roots = ctx.evidence.backward_roots.get(id(ctx.scope.node))
        if roots and not ctx.state.grad_off and not sanitized(stmt.value):
            element_roots = ctx.evidence.backward_element_roots.get(id(ctx.scope.node), {})
            for target in stmt.targets:
                for node in ast.walk(target):
                    if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Store):
                        name = dotted(node)
                        if not ctx.backpropagated_later(name, stmt):
                            continue
                        if name in element_roots:
                            for key in element_roots[name]:  # ``output["loss"].backward()``: that element
                                ctx.state.set_element(name, key, GRAPH_ONLY)
                        else:
                            ctx.state.add(name, GRAPH_ONLY)  # backpropagated later: it carries graph

    def _visit_AnnAssign(self, stmt: ast.AnnAssign) -> None:
        if stmt.value is not None:
            self._bind(stmt.target, stmt.value, self.ctx.labels(stmt.value))

    def _visit_AugAssign(self, stmt: ast.AugAssign) -> None:
        name = base_dotted(stmt.target)  # ``totals[key] += loss`` adds into ``totals``
        labels = self.ctx.labels(stmt.value)
        if name and labels and not self.ctx.state.grad_off:
            self.ctx.state.add(name, computed(labels))

    def _visit_Expr(self, stmt: ast.Expr) -> None:
        call = stmt.value
        ctx = self.ctx
        switched = ctx.modes.statement_mode(stmt)
        if switched is not None:
            ctx.state.grad_off = switched == OFF  # ``torch.set_grad_enabled(False)``, ``stack.enter_context(no_grad())``
            return
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            self._detaching_call(call)
            return
        state = ctx.state
        receiver = base_dotted(call.func.value)  # ``self.saved[ob_id].append(x)`` puts x into ``self.saved``
        if call.func.attr == "detach_":
            if receiver is None and isinstance(call.func.value, ast.Subscript):
                receiver = dotted(call.func.value.value)  # ``hidden[0].detach_()`` cuts every element we track
            if receiver is not None:
                state.set(receiver, EMPTY)
                self._note_detach(receiver)
            return
        if receiver is None:
            return
        if ctx.keeps_nothing_given(call):
            return  # a method of another file's class that keeps nothing it is given (``Accuracy.update``)
        if call.func.attr in _CONTAINER_METHODS:
            labels = EMPTY
            for arg in call.args:
                labels = labels | ctx.labels(arg)
            if labels:
                state.add(receiver, labels)  # the container now holds what was put in
                if "." in receiver and labels & _MAY_CARRY:
                    ctx.scope.escapes = True
        elif call.func.attr in {"clear"}:
            state.set(receiver, EMPTY)
        else:
            self._detaching_call(call)

    def _detaching_call(self, call: ast.AST) -> None:
        """``repackage(hidden)`` where the callee detaches its parameter in place."""
        ctx = self.ctx
        if not isinstance(call, ast.Call):
            return
        summary, arguments = self._callee_summary(call)
        if summary is None or not summary.detaches:
            return
        for parameter, argument in arguments():
            name = dotted(argument)
            if parameter in summary.detaches and name:
                ctx.state.set(name, EMPTY)
                self._note_detach(name)

    def _note_detach(self, name: str) -> None:
        scope = self.ctx.scope
        if not isinstance(scope.node, ast.Module) and name in self.ctx.graph.parameters(scope.node, bound=None):
            scope.summary.detaches.add(name)

    def _visit_Return(self, stmt: ast.Return) -> None:
        ctx = self.ctx
        value = stmt.value
        elements = [ctx.labels(e) for e in value.elts] if isinstance(value, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in value.elts) else None
        summary = ctx.scope.summary
        summary.add_return(ctx.labels(value), elements)
        summary.add_origins(None, self.origins_of(value) or frozenset())
        for index, element in enumerate(value.elts if elements is not None else ()):
            summary.add_origins(index, self.origins_of(element) or frozenset())

    def _visit_Global(self, stmt: ast.Global) -> None:
        self.ctx.scope.declared_global.update(stmt.names)

    def _visit_If(self, stmt: ast.If) -> None:
        if statically_false(stmt.test):
            self._block(stmt.orelse)  # the body never runs: nothing in it keeps or wastes memory
            return
        self._branches([stmt.body, stmt.orelse], stmt, narrowed=[scalar_isinstance(stmt.test), ()])

    def _visit_Match(self, stmt: ast.AST) -> None:
        self._branches([case.body for case in stmt.cases] + [[]], stmt)

    def _branches(self, bodies: list[list[ast.stmt]], owner: ast.AST, narrowed: list | None = None) -> None:
        """Each body from the same entry state, merged after; ``narrowed``: per body, the names its test shows
        to hold no tensor there (``if isinstance(x, np.ndarray): return x``)."""
        ctx = self.ctx
        entry = ctx.state
        merged: TaintState | None = None
        ctx.blocks.append(owner)
        try:
            for index, body in enumerate(bodies):
                ctx.state = entry.copy()
                for name in (narrowed[index] if narrowed else ()):
                    ctx.state.set(name, EMPTY)
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
        replaced = every_element_replaced(stmt)
        if replaced:
            ctx.state.set(replaced, EMPTY)  # ``for i in range(len(xs)): xs[i] = xs[i].item()``: numbers now
        self._block(stmt.orelse)

    def _loop_iteration(self, stmt: ast.AST) -> None:
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._bind_loop_target(stmt.target, stmt.iter)
        self._block(stmt.body)

    def _bind_loop_target(self, target: ast.AST, iterable: ast.AST) -> None:
        """Bind a loop's target to what iterating gives: ``enumerate`` counts, ``zip`` pairs, ``.items()``
        pairs keys (names, never graph) with values."""
        ctx = self.ctx
        call = iterable if isinstance(iterable, ast.Call) else None
        func_name = dotted(call.func) if call is not None else None
        if call is not None and func_name in {"enumerate", "zip"} and isinstance(target, (ast.Tuple, ast.List)):
            if func_name == "enumerate" and call.args and len(target.elts) == 2:
                self._bind(target.elts[0], None, EMPTY)
                self._bind_loop_target(target.elts[1], call.args[0])
                return
            if func_name == "zip" and len(call.args) == len(target.elts):
                for element, part in zip(target.elts, call.args):
                    self._bind_loop_target(element, part)
                return
        if call is not None and isinstance(call.func, ast.Attribute) and isinstance(target, (ast.Tuple, ast.List)):
            if call.func.attr in {"items", "named_parameters", "named_buffers", "named_modules", "named_children"} and len(target.elts) == 2:
                self._bind(target.elts[0], None, EMPTY)
                self._bind(target.elts[1], None, ctx.labels(iterable))
                return
        self._bind(target, None, ctx.labels(iterable))

    def _visit_With(self, stmt: ast.With) -> None:
        ctx = self.ctx
        saved = ctx.state.grad_off
        mode = ctx.modes.with_mode(stmt)
        if mode == OFF:
            ctx.state.grad_off = True
        elif mode == ON:
            ctx.state.grad_off = False
        for item in stmt.items:
            if item.optional_vars is not None:
                self._bind(item.optional_vars, None, EMPTY)
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
    def _bind(self, target: ast.AST, value: ast.AST | None, labels: Labels) -> None:
        state = self.ctx.state
        kind = type(target)
        if kind is ast.Name:
            name = target.id
            source = dotted(value) if type(value) in _NAMED else None
            if source and source != name:
                state.aliases[name] = state.resolve(source)
            else:
                state.aliases.pop(name, None)
            # ``stats``, ``metrics``: Python summaries by their name, unless the evidence says graph
            origins = self.origins_of(value)
            state.set(name, EMPTY if is_summary_name(name) and GRAPH not in labels and not origins else labels)
            self._follow_dict(name, origins)
            if type(value) is ast.Call:
                # ``result = step(batch)`` of a function returning a tuple: each position keeps its own labels,
                # so that ``loss, report, batch_size = result`` gives the int batch size none of the loss's.
                for index, part in enumerate(self._positions(value, state)):
                    state.set_element(name, index, part)
            return
        if kind is ast.Tuple or kind is ast.List:
            values = value.elts if type(value) in _SEQUENCES and len(value.elts) == len(target.elts) else None
            starred = any(isinstance(e, ast.Starred) for e in target.elts)
            for index, element in enumerate(target.elts):
                if values is not None:
                    self._bind(element, values[index], self.ctx.labels(values[index]))
                    continue
                part = None
                origins = None
                if isinstance(value, ast.Call) and not starred:
                    part = self.local_result(value, state, index)  # ``loss, logs = self.step(batch)``
                    if part is None:
                        part = self._clean_forward_position(value, index)  # ``loss, stats = self.loss_fn(b)``
                    if part is None and not state.grad_off:
                        part = self.ctx.evaluator.held_result(value, index)  # ``labels, loss = self.model.m(b)``
                    origins = self.origins_of(value, index)
                elif type(value) is ast.Name and not starred:
                    part = state.element(value.id, index)  # ``loss, logs = result``, ``result`` kept per position
                self._bind(element, None, labels if part is None else part)
                if origins is not None and type(element) is ast.Name:
                    self._follow_dict(element.id, origins)
            return
        if kind is ast.Starred:
            self._bind(target.value, None, labels)
            return
        if kind is ast.Subscript:
            container = dotted(target.value)
            if container and "." in container and labels & _MAY_CARRY:
                self.ctx.scope.escapes = True
            if container:
                if value is not None and container in state.origins:  # ``metrics["loss"] = loss``
                    state.origins[container] = state.origins[container] | self._put_into_dict(value)
                key = constant_key(target)
                if key is not None:
                    state.set_element(container, key, labels)  # this slot now holds exactly this value
                elif labels:
                    state.add(container, labels)
            return
        name = dotted(target)
        if name is None:
            return
        if "." in name and labels & _MAY_CARRY:
            self.ctx.scope.escapes = True
        state.set(name, labels)


_MAY_CARRY = frozenset({GRAPH, MAYBE_GRAPH})
_VISITORS: dict[type, object] = {}
_NAMED = frozenset({ast.Name, ast.Attribute})
_SEQUENCES = frozenset({ast.Tuple, ast.List})


def sanitized(value: ast.AST) -> bool:
    """A value that cannot carry graph whatever it is computed from: a literal, ``x.item()``, ``float(x)``."""
    if isinstance(value, (ast.Constant, ast.List, ast.Dict, ast.Tuple, ast.Set, ast.JoinedStr, ast.Compare)):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute):
            return func.attr in CLEAN_METHODS
        return isinstance(func, ast.Name) and func.id in {"float", "int", "bool", "str", "len", "list", "dict", "set", "tuple"}
    return False


def every_element_replaced(loop: ast.AST) -> str | None:
    """The sequence whose every element a loop over its indices overwrites with a value that carries no graph
    (``for i in range(len(xs)): xs[i] = xs[i].item()``, or over ``enumerate(xs)``), on every pass; else None."""
    if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call) or loop.iter.keywords:
        return None
    iterable, index = loop.iter, None
    if dotted(iterable.func) == "range" and len(iterable.args) == 1 and isinstance(iterable.args[0], ast.Call) \
            and dotted(iterable.args[0].func) == "len" and len(iterable.args[0].args) == 1 and isinstance(loop.target, ast.Name):
        sequence, index = dotted(iterable.args[0].args[0]), loop.target.id
    elif dotted(iterable.func) == "enumerate" and len(iterable.args) == 1 and isinstance(loop.target, ast.Tuple) \
            and len(loop.target.elts) == 2 and isinstance(loop.target.elts[0], ast.Name):
        sequence, index = dotted(iterable.args[0]), loop.target.elts[0].id
    else:
        return None
    for stmt in loop.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript):
            target = stmt.targets[0]
            if dotted(target.value) == sequence and isinstance(target.slice, ast.Name) and target.slice.id == index \
                    and sanitized(stmt.value):
                return sequence
    return None


def _no_transfer(walker: Walker, stmt: ast.stmt) -> None:
    """Statements that bind nothing (pass, raise, import...) leave the taint state as it is."""


def _activation_parameters(node: ast.AST, cls: ast.ClassDef | None, ctx: LintContext) -> set[str]:
    """Parameters that receive activations: a module's forward() inputs, a forward hook's inputs and
    outputs, and what an image pool is fed."""
    args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    if id(node) in ctx.graph.forward_hooks:
        hook_args = [a.arg for a in args if a.arg not in {"self", "cls"}]
        return set(hook_args[1:])  # (module, inputs, output): what the module received and returned
    if cls is None or not isinstance(node, _SCOPES):
        return set()
    is_module = cls.name in ctx.evidence.module_classes
    # An image pool is fed generator outputs; when this file feeds it, its callers decide (summaries).
    fed_here = bool(ctx.graph.sites_to.get(id(node)))
    is_forward = node.name == "forward" and is_module
    # A pytest class (``TestMemoryPool``) takes fixtures, not images.
    is_pool = "pool" in name_words(cls.name) and not is_module and not fed_here and not cls.name.startswith("Test")
    if not (is_forward or is_pool):
        return set()
    defaults = dict(zip([a.arg for a in (node.args.posonlyargs + node.args.args)][::-1], node.args.defaults[::-1]))
    return {
        arg.arg for arg in args[1:]
        if not isinstance(defaults.get(arg.arg), ast.Constant) and not non_tensor_annotation(arg.annotation)
        and (is_forward or _used_as_tensor(node, arg.arg))
    }


def _used_as_tensor(func: ast.AST, parameter: str) -> bool:
    """The parameter (or an element it is iterated into) is handed to a torch function or has a tensor method
    called on it: what a pool not fed in this file receives is a tensor only by that evidence (a dict of ids
    and strings is not)."""
    names = {parameter}
    for node in ast.walk(func):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, ast.Name) and node.iter.id in names:
            names |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        callee = dotted(node.func) or ""
        if callee.split(".", 1)[0] in {"torch", "F"} and any(isinstance(a, ast.Name) and a.id in names for a in node.args):
            return True
        func_node = node.func
        if isinstance(func_node, ast.Attribute) and isinstance(func_node.value, ast.Name) and func_node.value.id in names:
            if func_node.attr not in CLEAN_METHODS and func_node.attr not in {"get", "keys", "items", "values", "split", "format"}:
                return True
    return False


# Not ``float``: a 0-d tensor passes for one (``def update(self, val: float)`` given a loss, metrics typed
# ``Dict[str, float]`` holding losses), so a parameter typed so may still keep a graph.
_NON_TENSOR_TYPES = frozenset({
    "int", "bool", "str", "bytes", "tuple", "Tuple", "list", "List", "Sequence", "Optional",
    "Union", "dict", "Dict", "Mapping", "device", "dtype", "Callable", "None", "Size", "Iterable", "type", "Type",
    "Literal", "slice", "range", "torch", "typing",
})


def non_tensor_annotation(annotation: ast.AST | None) -> bool:
    """``int``, ``Tuple[int, int]``, ``Optional[torch.device]``: a parameter that cannot hold a tensor."""
    if annotation is None:
        return False
    words = annotation_words(annotation)
    return bool(words) and words <= _NON_TENSOR_TYPES


__all__ = ["Walker", "non_tensor_annotation", "sanitized"]
