"""What a function's callers and callees imply about it: the grad mode it runs in, whether it trains or runs
a forward pass, whether it runs on every step of a hot loop, whether it belongs to a module's forward, and
where an autograd.Function's tensors come from. Part of the call graph (callgraph.py)."""

from __future__ import annotations

import ast

from ..facts.forwards import DIFFERENTIABLE, FORWARD, forward_kind
from ..facts.function_ctx import function_entry_points, provenance
from ..facts.gradmode import MAYBE, OFF
from ..facts.library import FRAMEWORK_NO_GRAD_HOOKS, LIGHTNING_NO_GRAD_HOOKS
from ..facts.project import project_ancestors
from ..parse.syntax import CONSTRUCTORS, dotted, is_backward_call, is_optimizer_step, is_small_constant_loop, iterates_data
from .call_sites import CallSite


class Contexts:
    """The contexts part of CallGraph (it supplies facts, evidence, modes, sites and the lexical tables)."""

    # -- contexts --------------------------------------------------------------------------------
    def _own_mode(self, func: ast.AST) -> str | None:
        mode = self.modes.decorator_mode(func)
        if mode is not None:
            return mode
        cls = self.facts.class_of(func)
        if cls is None:
            return None
        if func.name in LIGHTNING_NO_GRAD_HOOKS and (cls.name in self.evidence.module_classes or self._uses_lightning()):
            return OFF  # the trainer runs validation/test/predict hooks (module, strategy, callback) under inference_mode
        if func.name in self._framework_no_grad_hooks(cls):
            return OFF  # a hook the framework's driver runs under no_grad / inference_mode
        if cls.name in self.evidence.module_classes:
            return None
        call = self.facts.methods.get((cls.name, "__call__"))
        if call is not None and call is not func and self.modes.decorator_mode(call) == OFF:
            return OFF  # a pipeline whose __call__ runs under no_grad: its methods serve that call
        return None

    def _framework_no_grad_hooks(self, cls: ast.ClassDef, depth: int = 0) -> frozenset[str]:
        """The hooks that a framework base of ``cls`` (through the file's own subclasses too) runs without grad."""
        hooks: frozenset[str] = frozenset()
        for base in cls.bases:
            name = dotted(base.value if isinstance(base, ast.Subscript) else base) or ""  # ``EvalUnit[Batch]``
            local = self.facts.classes.get(name.rsplit(".", 1)[-1])
            if local is not None and local is not cls and depth < 8:
                hooks |= self._framework_no_grad_hooks(local, depth + 1)
                continue
            head, dot, rest = name.partition(".")
            hooks |= FRAMEWORK_NO_GRAD_HOOKS.get(f"{self.facts.imports.get(head, head)}{dot}{rest}", frozenset())
        for qualified in project_ancestors(cls, self.facts):  # a framework base of a class of another file
            hooks |= FRAMEWORK_NO_GRAD_HOOKS.get(qualified, frozenset())
        return hooks

    def _uses_lightning(self) -> bool:
        return any(q.split(".", 1)[0] in {"lightning", "pytorch_lightning", "lightning_fabric"} for q in self.facts.imports.values())

    def _contexts(self) -> dict[int, str | None]:
        """Grad mode each function runs in: its own, else the one all its callers agree on."""
        context: dict[int, str | None] = {}
        functions = self.facts.scopes
        for func in functions:
            context[id(func)] = self._own_mode(func)
        for _ in range(len(functions) + 1):
            changed = False
            for func in functions:
                if self._own_mode(func) is not None:
                    continue
                sites = [s for s in self.callers_of(func) if s.caller is not func]
                if not sites:
                    parent = self.facts.parent.get(id(func))
                    if parent is not None and context.get(id(func)) is None:
                        inherited = context.get(id(parent))  # a closure runs where its parent runs
                        if inherited is not None:
                            context[id(func)] = inherited
                            changed = True
                    continue
                modes = set()
                for site in sites:
                    mode = site.mode if site.mode is not None else (
                        (OFF if self.facts.grad_off_everywhere else None) if isinstance(site.caller, ast.Module)
                        else context.get(id(site.caller))
                    )
                    modes.add(mode)
                new = OFF if modes == {OFF} else (MAYBE if modes <= {OFF, MAYBE} else None)
                if new != context.get(id(func)):
                    context[id(func)] = new
                    changed = True
            if not changed:
                break
        return context

    def site_mode(self, site: CallSite) -> str | None:
        if site.mode is not None:
            return site.mode
        return self.scope_mode(site.caller)

    def _trains(self) -> dict[int, bool]:
        """A backward pass, autograd.grad or an optimizer step runs in the function or a callee."""
        trains = {id(s): self.facts.trains_directly(s) for s in self.scopes}
        for _ in range(len(self.scopes) + 1):
            changed = False
            for scope in self.scopes:
                if trains[id(scope)]:
                    continue
                if any(trains.get(id(site.callee)) and self.site_mode(site) != OFF for site in self.sites_from.get(id(scope), ())):
                    trains[id(scope)] = True
                    changed = True
            if not changed:
                break
        return trains

    def trains_node(self, node: ast.AST, scope: ast.AST) -> bool:
        """A training call happens inside ``node`` (a statement or loop), directly or through a callee."""
        if self.facts.trains_directly(node):
            return True
        for call in self.facts.calls_inside(node):
            site = self.site_of.get(id(call))
            if site is not None and self.trains.get(id(site.callee)) and self.site_mode(site) != OFF:
                return True
            forward = self.forward_of.get(id(call))  # ``self.explainer(model, x)`` whose forward fits by backward
            if forward is not None and self.trains.get(id(forward)) and self.mode_at(node) != OFF:
                return True
        return False

    def _runs_forward(self) -> dict[int, bool]:
        """The function runs a module forward with recording on, itself or through a callee."""
        evidence = self.evidence
        runs: dict[int, bool] = {}
        for scope in self.scopes:
            found = False
            if self.scope_mode(scope) in (OFF, MAYBE) or getattr(scope, "name", None) in CONSTRUCTORS:
                runs[id(scope)] = False  # a constructor's dry run (to find shapes) is one-time initialisation
                continue
            switched_off = False
            for stmt_id, call in self._calls_with_statements(scope):
                mode = self.lexical.get(stmt_id, (None, ()))[0]
                if forward_kind(evidence, call, scope) not in (FORWARD, DIFFERENTIABLE):
                    continue
                if mode in (OFF, MAYBE):
                    switched_off = True
                else:
                    found = True
                if found and switched_off:
                    break
            runs[id(scope)] = found
            if found and switched_off:
                # ``if self.training: out = model(x) else: with torch.no_grad(): out = model(x)``
                self.picks_grad_mode.add(id(scope))
        for _ in range(len(self.scopes) + 1):
            changed = False
            for scope in self.scopes:
                if runs[id(scope)] or self.scope_mode(scope) in (OFF, MAYBE) or getattr(scope, "name", None) in CONSTRUCTORS:
                    continue
                for site in self.sites_from.get(id(scope), ()):
                    if runs.get(id(site.callee)) and site.mode not in (OFF, MAYBE):
                        runs[id(scope)] = changed = True
                        break
            if not changed:
                break
        return runs

    def is_repeating_loop(self, loop: ast.stmt, scope: ast.AST) -> bool:
        """A training or data loop (not bounded by a small constant)."""
        return not is_small_constant_loop(loop) and (self.trains_node(loop, scope) or iterates_data(loop))

    # -- what runs on every step ------------------------------------------------------------------
    def _direct_work(self, call: ast.Call, scope: ast.AST) -> bool:
        """A forward or backward pass or an optimizer step, written as this call (memoised per call)."""
        key = id(call)
        known = self._work_calls.get(key)
        if known is None:
            known = self._work_calls[key] = (
                is_backward_call(call) or is_optimizer_step(call)
                or forward_kind(self.evidence, call, scope) in (FORWARD, DIFFERENTIABLE)
            )
        return known

    def _model_calls(self, calls, scope: ast.AST) -> bool:
        """A forward or backward pass or an optimizer step among ``calls``, or a call of a function of this
        file that does one per call (not one that runs a whole loop of them, like ``train_epoch()``)."""
        for call in calls:
            if self._direct_work(call, scope):
                return True
            site = self.site_of.get(id(call))
            if site is not None and self.step_work.get(id(site.callee)):
                return True
        return False

    def _step_work(self) -> dict[int, bool]:
        """The function does model work outside its own loops: one call of it is one step. (And
        ``loop_work``: it does model work inside a loop of its own, like ``train_epoch()``.)"""
        self._work_calls: dict[int, bool] = {}
        work: dict[int, bool] = {}
        self.loop_work = {}
        self.step_work = work
        outside: dict[int, list[ast.Call]] = {}
        inside: dict[int, list[ast.Call]] = {}
        for scope in self.facts.scopes:
            statements = self.statements_in.get(id(scope), ())
            outside[id(scope)] = [c for stmt in statements if not self.loops_at(stmt) for c in self.facts.calls_of(stmt)]
            inside[id(scope)] = [c for stmt in statements if self.loops_at(stmt) for c in self.facts.calls_of(stmt)]
        for _ in range(3):  # a callee's step work makes its callers' calls work too
            for scope in self.facts.scopes:
                key = id(scope)
                if not work.get(key):
                    work[key] = self._model_calls(outside[key], scope)
                if not self.loop_work.get(key):
                    self.loop_work[key] = self._model_calls(inside[key], scope)
        return work

    def is_hot_loop(self, loop: ast.stmt, scope: ast.AST) -> bool:
        """A loop that runs many times with model work in each iteration: a training or data loop, not a
        loop over a few items, not a retry loop that ends on the first success, not an outer loop
        (epochs, ops to profile) whose work all happens in a loop nested in it."""
        key = id(loop)
        known = self._hot.get(key)
        if known is None:
            if is_small_constant_loop(loop) or _ends_on_success(loop):
                known = False
            else:
                nested = {id(c) for inner in self.facts.loops_inside(scope) if inner is not loop and _within(inner, loop)
                          for c in self.facts.calls_inside(inner)}
                own = [c for c in self.facts.calls_inside(loop) if id(c) not in nested]
                runs_loops = any(
                    (site := self.site_of.get(id(c))) is not None and self.loop_work.get(id(site.callee))
                    and not self.step_work.get(id(site.callee)) for c in own
                )
                if runs_loops:
                    known = False  # ``for epoch ...: train_epoch()``: each iteration runs a whole loop of steps
                elif self._model_calls(own, scope):
                    known = True
                elif self._model_calls(self.facts.calls_inside(loop), scope):
                    known = False  # the work is in a nested loop: this level runs once per many steps
                else:
                    known = iterates_data(loop)
            self._hot[key] = known
        return known

    def _called_per_step(self) -> dict[int, bool]:
        """Called on every iteration of a hot loop, or by a function that is, or by a module's forward."""
        per_step: dict[int, bool] = {}
        for func in self.facts.scopes:
            per_step[id(func)] = any(
                bool(site.loops) and self.is_hot_loop(site.loops[-1], site.caller) for site in self.callers_of(func)
            )
        for _ in range(len(self.facts.scopes) + 1):
            changed = False
            for func in self.facts.scopes:
                if per_step[id(func)]:
                    continue
                if any(not site.loops and per_step.get(id(site.caller)) for site in self.callers_of(func)):
                    per_step[id(func)] = changed = True
            if not changed:
                break
        return per_step

    # -- forward membership ------------------------------------------------------------------------
    def _part_of_forward(self) -> dict[int, bool]:
        """Methods run by a module's forward (``self.predict(x)`` called from forward) belong to it, and so do
        a module class's methods that a forward calls by name on an object of no known class (a wrapper's
        ``self.model._infer(inputs)``): the grad mode they run in is the forward caller's."""
        part: dict[int, bool] = {}
        module_methods: dict[str, list[ast.AST]] = {}
        for func in self.facts.scopes:
            cls = self.facts.class_of(func)
            of_module = cls is not None and cls.name in self.evidence.module_classes
            part[id(func)] = func.name == "forward" and of_module
            if of_module:
                module_methods.setdefault(func.name, []).append(func)
        asked: set[int] = set()
        for _ in range(len(self.facts.scopes) + 1):
            changed = False
            for func in self.facts.scopes:
                if not part[id(func)]:
                    if any(part.get(id(site.caller)) for site in self.callers_of(func)):
                        part[id(func)] = changed = True
                    continue
                if id(func) in asked or not module_methods:
                    continue
                asked.add(id(func))
                for name in self._called_on_unknown_objects(func):
                    for method in module_methods.get(name, ()):
                        if not part[id(method)]:
                            part[id(method)] = changed = True
            if not changed:
                break
        return part

    def _called_on_unknown_objects(self, func: ast.AST) -> set[str]:
        """Method names ``func`` calls on an object whose class this file does not resolve (``self.model.x()``)."""
        return {
            call.func.attr for call in self.facts.calls_inside(func)
            if isinstance(call.func, ast.Attribute) and id(call) not in self.site_of and dotted(call.func.value) not in {"self", "cls", None}
        }

    # -- autograd.Function contexts ------------------------------------------------------------------
    def _ctx_provenance(self) -> dict[int, dict[str, str]]:
        """For each function that receives an autograd.Function's ``ctx`` (its forward and setup_context,
        and helpers they pass ``ctx`` to): where its tensors come from (input, output, computed)."""
        found: dict[int, dict[str, str]] = {}
        work = [entry for cls in self.facts.classes.values() for entry in function_entry_points(cls)]
        for _ in range(64):
            if not work:
                break
            func, seeds, returns_are_outputs = work.pop()
            known = provenance(func, {**found.get(id(func), {}), **seeds}, returns_are_outputs)
            if found.get(id(func)) == known:
                continue
            found[id(func)] = known
            for site in self.sites_from.get(id(func), ()):
                pairs = self.bound_arguments(site)
                if not any(isinstance(a, ast.Name) and a.id == "ctx" for _, a in pairs):
                    continue
                passed = {p: known[n] for p, a in pairs if (n := dotted(a)) and n in known}
                work.append((site.callee, passed, False))
        return found


def _ends_on_success(loop: ast.AST) -> bool:
    """``while batch_size: try: run(); break; except OOM: batch_size //= 2``: it runs until one attempt works."""
    for stmt in loop.body:
        if isinstance(stmt, ast.Try) and stmt.handlers:
            for part in (stmt.body, stmt.orelse):
                for inner in part:
                    if any(isinstance(n, (ast.Break, ast.Return)) for n in ast.walk(inner)):
                        return True
    return False


def _within(inner: ast.AST, outer: ast.AST) -> bool:
    return outer.lineno < inner.lineno <= (outer.end_lineno or outer.lineno)
