"""The file's call graph: which calls reach functions of this file, and what each function's callers imply.

Built once per file from syntax and module evidence, before any taint is computed:

- call sites with their lexical grad mode (``with torch.no_grad():``, ``ExitStack.enter_context``) and the
  loops around them;
- per function: the grad mode it runs in (its decorator, a no_grad ``__call__`` of its class, or every
  caller calling it with recording off — ``with torch.no_grad(): main()`` included), whether it trains
  (itself or through a callee), runs a forward pass, is called on every iteration of a loop, is part of a
  module's forward, and whether a backward pass is reachable from what it returns;
- module evidence for parameters that callers pass modules to.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .dataflow import Dataflow, backward_reads, names_read, scope_edges
from .evidence import DIFFERENTIABLE, FORWARD, Evidence, forward_kind
from .facts import FileFacts
from .function_ctx import function_entry_points, provenance
from .gradmode import MAYBE, OFF, ON, GradModes
from .library import BACKPROPAGATED_RETURNS, FORWARD_HOOK_REGISTRATIONS, LIGHTNING_NO_GRAD_HOOKS
from .syntax import call_name, dotted, is_backward_call, is_optimizer_step, is_small_constant_loop, iterates_data, last_name

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
CLOSURE, CALLBACK = "closure", "callback"
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass
class CallSite:
    call: ast.Call
    caller: ast.AST  # a function definition or the module
    callee: ast.AST  # a function definition of this file
    mode: str | None  # the grad mode the caller's code sets around the call (None: the caller's own)
    loops: tuple[ast.stmt, ...]  # the caller's loops around the call, outermost first
    skips_self: bool  # a method called through an instance: its first parameter is the instance
    indirect: str | None = None  # CLOSURE: ``optimizer.step(closure)`` runs it and returns its result;
    # CALLBACK: a function passed to a call (``beam_search.search(state, step)``) that will run it


class CallGraph:
    def __init__(self, facts: FileFacts, evidence: Evidence, modes: GradModes) -> None:
        self.facts = facts
        self.evidence = evidence
        self.modes = modes
        self.lexical: dict[int, tuple[str | None, tuple[ast.stmt, ...]]] = {}  # id(stmt) -> (mode, loops)
        self.statement_scope: dict[int, ast.AST] = {}
        self.sites_from: dict[int, list[CallSite]] = {}  # id(caller) -> sites
        self.sites_to: dict[int, list[CallSite]] = {}  # id(callee) -> sites
        self.site_of: dict[int, CallSite] = {}  # id(call) -> site
        self.callbacks_of: dict[int, list[CallSite]] = {}  # id(call) -> functions it is handed
        self._instances: dict[int, dict[str, ast.ClassDef]] = {}
        self._held_functions: dict[int, dict[str, ast.AST]] = {}
        self._factories: dict[int, ast.AST | None] = {}
        self._return_nodes: dict[int, list[ast.Return]] = {}
        self._backward_parts: dict[int, set[int]] = {}
        self._returned_parts: dict[int, tuple[set[int], set[str]]] = {}
        self._reads: dict[int, list[set[str]]] = {}
        self._edges: dict[int, list[tuple[set[str], set[str]]]] = {}
        self.statements_in: dict[int, list[ast.stmt]] = {}  # id(scope) -> its statements, in order
        self.forward_hooks: set[int] = set()  # id() of functions registered as forward hooks
        self.recursive: set[int] = set()  # id() of functions that call themselves, directly or not (set by bottom_up)
        self._call_targets: dict[int, dict[int, set[str]]] = {}
        self.scopes = [facts.tree, *facts.scopes]
        for scope in self.scopes:
            self._lexical_scope(scope)
        self._collect_sites()
        self._module_parameters()
        self.context = self._contexts()
        self.trains = self._trains()
        self.runs_forward = self._runs_forward()
        self._hot: dict[int, bool] = {}
        self.step_work = self._step_work()
        self.in_loop = self._called_per_step()
        self.backprops_params = self._backpropagated_parameters()
        self.result_backpropagated = self._results_backpropagated()
        self.part_of_forward = self._part_of_forward()
        self.ctx_provenance = self._ctx_provenance()

    # -- lexical grad modes and loops --------------------------------------------------------
    def _lexical_scope(self, scope: ast.AST) -> None:
        table, owner, modes = self.lexical, self.statement_scope, self.modes
        order = self.statements_in[id(scope)] = []

        def block(stmts: list[ast.stmt], mode: str | None, loops: tuple[ast.stmt, ...]) -> None:
            for stmt in stmts:
                table[id(stmt)] = (mode, loops)
                owner[id(stmt)] = scope
                order.append(stmt)
                kind = type(stmt)
                if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                    continue
                if kind in (ast.With, ast.AsyncWith):
                    block(stmt.body, modes.with_mode(stmt) or mode, loops)
                elif kind in (ast.For, ast.AsyncFor, ast.While):
                    block(stmt.body, mode, loops + (stmt,))
                    block(stmt.orelse, mode, loops)
                elif kind is ast.If:
                    block(stmt.body, mode, loops)
                    block(stmt.orelse, mode, loops)
                elif kind is ast.Try or type(stmt).__name__ == "TryStar":
                    block(stmt.body, mode, loops)
                    for handler in stmt.handlers:
                        table[id(handler)] = (mode, loops)
                        block(handler.body, mode, loops)
                    block(stmt.orelse, mode, loops)
                    block(stmt.finalbody, mode, loops)
                elif type(stmt).__name__ == "Match":
                    for case in stmt.cases:
                        block(case.body, mode, loops)
                else:
                    switched = modes.statement_mode(stmt)
                    if switched is not None:
                        mode = switched  # for the rest of this block

        block(scope.body, None, ())

    def mode_at(self, stmt: ast.AST) -> str | None:
        """The grad mode at ``stmt``: what its own function sets around it, else the function's context."""
        mode, _ = self.lexical.get(id(stmt), (None, ()))
        if mode is not None:
            return mode
        return self.scope_mode(self.statement_scope.get(id(stmt)))

    def scope_mode(self, scope: ast.AST | None) -> str | None:
        if scope is None:
            return None
        if isinstance(scope, ast.Module):
            return OFF if self.facts.grad_off_everywhere else None
        return self.context.get(id(scope))

    def loops_at(self, stmt: ast.AST) -> tuple[ast.stmt, ...]:
        return self.lexical.get(id(stmt), (None, ()))[1]

    # -- resolution ----------------------------------------------------------------------------
    def resolve(self, call: ast.Call, scope: ast.AST) -> tuple[ast.AST | None, bool]:
        """(the function of this file ``call`` runs, whether its first parameter is bound to an instance)."""
        func = call.func
        facts = self.facts
        if isinstance(func, ast.Name):
            current = scope
            while current is not None and not isinstance(current, ast.Module):
                for nested in facts.nested.get(id(current), ()):
                    if nested.name == func.id:
                        return nested, False
                held = self._function_values(current).get(func.id)
                if held is not None:
                    return held, False
                current = facts.parent.get(id(current))
            local = facts.functions.get(func.id)
            if local is not None:
                return local, False
            cls = facts.classes.get(func.id)
            if cls is not None:
                init = self.method(cls, "__init__")
                return init, init is not None
            return None, False
        if not isinstance(func, ast.Attribute):
            return None, False
        receiver = func.value
        if isinstance(receiver, ast.Call) and call_name(receiver) == "super":
            cls = self.enclosing_class(scope)
            if cls is None:
                return None, False
            for base in self.local_bases(cls):
                found = self.method(base, func.attr)
                if found is not None:
                    return found, True
            return None, False
        name = dotted(receiver)
        if name is None:
            return None, False
        if name in {"self", "cls"}:
            cls = self.enclosing_class(scope)
            found = self.method(cls, func.attr) if cls is not None else None
            return found, found is not None and not _is_static(found)
        if name in facts.classes:  # ``Helper.method(...)``
            found = self.method(facts.classes[name], func.attr)
            return found, found is not None and _is_classmethod(found)
        cls = self.instance_class(name, scope)
        if cls is not None:
            found = self.method(cls, func.attr)
            return found, found is not None and not _is_static(found)
        return None, False

    def _function_values(self, scope: ast.AST) -> dict[str, ast.AST]:
        """Names of a scope bound to a function of this file: ``closure = self._setup_closure(...)`` where
        that method returns a nested ``def``, or ``fn = other_function``."""
        found = self._held_functions.get(id(scope))
        if found is None:
            found = self._held_functions[id(scope)] = {}
            for store in self.facts.stores_inside(scope):
                if not (isinstance(store, ast.Assign) and len(store.targets) == 1 and isinstance(store.targets[0], ast.Name)):
                    continue
                value = store.value
                if isinstance(value, ast.Call):
                    target = self._returned_function(value, scope)
                elif isinstance(value, ast.Name):
                    target = self.facts.functions.get(value.id)
                else:
                    target = None
                if target is not None:
                    found[store.targets[0].id] = target
        return found

    def _returned_function(self, call: ast.Call, scope: ast.AST) -> ast.AST | None:
        factory, _ = self.resolve(call, scope)
        if factory is None:
            return None
        key = id(factory)
        if key not in self._factories:
            nested = self.facts.nested.get(key, ())
            returned = {n.value.id for n in self._returns(factory) if isinstance(n.value, ast.Name)} if nested else set()
            self._factories[key] = next((f for f in nested if f.name in returned), None)
        return self._factories[key]

    def _returns(self, func: ast.AST) -> list[ast.Return]:
        """The return statements of a function (its own, not those of functions nested in it)."""
        key = id(func)
        found = self._return_nodes.get(key)
        if found is None:
            found = self._return_nodes[key] = [s for s in self.statements_in.get(key, ()) if isinstance(s, ast.Return)]
        return found

    def enclosing_class(self, scope: ast.AST) -> ast.ClassDef | None:
        current = scope
        while current is not None and not isinstance(current, ast.Module):
            cls = self.facts.class_of(current)
            if cls is not None:
                return cls
            current = self.facts.parent.get(id(current))
        return None

    def local_bases(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        found = []
        for base in cls.bases:
            local = self.facts.classes.get(last_name(dotted(base) or ""))
            if local is not None and local is not cls and local not in found:
                found.append(local)
        return found

    def method(self, cls: ast.ClassDef, name: str, depth: int = 0) -> ast.AST | None:
        found = self.facts.methods.get((cls.name, name))
        if found is not None or depth > 8:
            return found
        for base in self.local_bases(cls):
            found = self.method(base, name, depth + 1)
            if found is not None:
                return found
        return None

    def instance_class(self, name: str, scope: ast.AST) -> ast.ClassDef | None:
        """The class of this file an instance name is bound to (``meter = AverageMeter()``)."""
        if name.startswith("self."):
            cls = self.enclosing_class(scope)
            if cls is None:
                return None
            return self._class_instances(cls).get(name)
        if "." in name:
            return None
        current = scope
        while current is not None:
            found = self._scope_instances(current).get(name)
            if found is not None:
                return found
            if isinstance(current, ast.Module):
                return None
            current = self.facts.parent.get(id(current)) or self.facts.tree
        return None

    def _scope_instances(self, scope: ast.AST) -> dict[str, ast.ClassDef]:
        key = id(scope)
        found = self._instances.get(key)
        if found is None:
            found = self._instances[key] = {}
            classes = self.facts.classes
            for store in self.facts.stores_inside(scope):
                if isinstance(store, ast.Assign) and isinstance(store.value, ast.Call):
                    cls = classes.get(call_name(store.value))
                    if cls is not None:
                        for target in store.targets:
                            name = dotted(target)
                            if name:
                                found[name] = cls
            if not isinstance(scope, ast.Module):
                for arg in [*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs]:
                    annotation = dotted(arg.annotation) if arg.annotation is not None else None
                    if annotation and last_name(annotation) in classes:
                        found[arg.arg] = classes[last_name(annotation)]
        return found

    def _class_instances(self, cls: ast.ClassDef) -> dict[str, ast.ClassDef]:
        key = id(cls)
        found = self._instances.get(key)
        if found is None:
            found = self._instances[key] = {}
            for (owner, _), method in self.facts.methods.items():
                if owner == cls.name:
                    found.update({k: v for k, v in self._scope_instances(method).items() if k.startswith("self.")})
        return found

    # -- sites -----------------------------------------------------------------------------------
    def _collect_sites(self) -> None:
        for scope in self.scopes:
            sites: list[CallSite] = []
            for stmt_id, call in self._calls_with_statements(scope):
                mode, loops = self.lexical.get(stmt_id, (None, ()))
                callee, skips_self = self.resolve(call, scope)
                indirect = None
                if callee is None:
                    callee = self._stepped_closure(call, scope)
                    indirect = CLOSURE if callee is not None else None
                if callee is not None:
                    site = CallSite(call, scope, callee, mode, loops, skips_self, indirect)
                    sites.append(site)
                    self.sites_to.setdefault(id(callee), []).append(site)
                    self.site_of[id(call)] = site
                for function in self._callbacks(call, scope, exclude=callee):
                    site = CallSite(call, scope, function, mode, loops, False, CALLBACK)
                    sites.append(site)
                    self.sites_to.setdefault(id(function), []).append(site)
                    self.callbacks_of.setdefault(id(call), []).append(site)
            self.sites_from[id(scope)] = sites
            for call in self.facts.calls_inside(scope):
                if isinstance(call.func, ast.Attribute) and call.func.attr in FORWARD_HOOK_REGISTRATIONS and call.args:
                    target = self._hook_function(call.args[0], scope)
                    if target is not None:
                        self.forward_hooks.add(id(target))  # runs inside the module's forward

    def _callbacks(self, call: ast.Call, scope: ast.AST, exclude: ast.AST | None) -> list[ast.AST]:
        """Functions of this file passed by name to a call, which will run them."""
        found = []
        for argument in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(argument, ast.Name) or (isinstance(argument, ast.Attribute) and dotted(argument) in {f"self.{argument.attr}", f"cls.{argument.attr}"}):
                function, _ = self.resolve(ast.Call(func=argument, args=[], keywords=[]), scope)
                if function is not None and function is not exclude and function.name != "__init__":
                    found.append(function)
        return found

    def _stepped_closure(self, call: ast.Call, scope: ast.AST) -> ast.AST | None:
        """``optimizer.step(closure)``: torch optimizers call the closure and return what it returns."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "step"):
            return None
        argument = call.args[0] if len(call.args) == 1 else next((k.value for k in call.keywords if k.arg == "closure"), None)
        if not isinstance(argument, ast.Name):
            return None
        probe = ast.Call(func=argument, args=[], keywords=[])
        found, _ = self.resolve(probe, scope)
        return found

    def _hook_function(self, arg: ast.AST, scope: ast.AST) -> ast.AST | None:
        """The function of this file a hook argument names: ``fn``, ``self.fn`` or ``make_hook(name)``
        returning a nested ``def``."""
        if isinstance(arg, ast.Call):
            factory, _ = self.resolve(arg, scope)
            if factory is None:
                return None
            returned = {n.value.id for n in ast.walk(factory) if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)}
            return next((f for f in self.facts.nested.get(id(factory), ()) if f.name in returned), None)
        probe = ast.Call(func=arg, args=[], keywords=[])
        found, _ = self.resolve(probe, scope)
        return found

    def _calls_with_statements(self, scope: ast.AST):
        own_calls = self.facts.own_calls
        for stmt in self.statements_in.get(id(scope), ()):
            for call in own_calls.get(id(stmt), ()):
                yield id(stmt), call

    def _module_parameters(self) -> None:
        """Parameters that a caller passes a module to are modules too (two rounds: callers of callers)."""
        evidence = self.evidence
        for _ in range(2):
            changed = False
            for scope in self.scopes:
                for site in self.sites_from.get(id(scope), ()):
                    for parameter, argument in self.bound_arguments(site):
                        no_grad = evidence.param_no_grad.setdefault(id(site.callee), set())
                        if parameter not in no_grad and evidence.is_no_grad_callable(argument, scope):
                            no_grad.add(parameter)  # a pipeline passed in: calling it runs without grad
                            changed = True
                        known = evidence.param_modules.setdefault(id(site.callee), set())
                        if parameter not in known and evidence.is_module(argument, scope):
                            known.add(parameter)
                            changed = True
            if not changed:
                break
            evidence.build()

    def bound_arguments(self, site: CallSite) -> list[tuple[str, ast.AST]]:
        """(parameter, argument) pairs of a call site."""
        if site.indirect:
            return []
        callee = site.callee
        params = [a.arg for a in callee.args.posonlyargs + callee.args.args]
        if site.skips_self and params:
            params = params[1:]
        pairs = [(p, a) for p, a in zip(params, site.call.args) if not isinstance(a, ast.Starred)]
        names = set(params) | {a.arg for a in callee.args.kwonlyargs}
        pairs.extend((k.arg, k.value) for k in site.call.keywords if k.arg in names)
        return pairs

    def parameters(self, func: ast.AST, bound: bool | None = None) -> list[str]:
        params = [a.arg for a in func.args.posonlyargs + func.args.args]
        if bound is None:
            bound = self.facts.class_of(func) is not None and not _is_static(func)
        return params[1:] if bound and params else params

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
        if cls.name in self.evidence.module_classes:
            return None
        call = self.facts.methods.get((cls.name, "__call__"))
        if call is not None and call is not func and self.modes.decorator_mode(call) == OFF:
            return OFF  # a pipeline whose __call__ runs under no_grad: its methods serve that call
        return None

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
                sites = [s for s in self.sites_to.get(id(func), ()) if s.caller is not func]
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
        return False

    def _runs_forward(self) -> dict[int, bool]:
        """The function runs a module forward with recording on, itself or through a callee."""
        evidence = self.evidence
        runs: dict[int, bool] = {}
        for scope in self.scopes:
            found = False
            if self.scope_mode(scope) in (OFF, MAYBE):
                runs[id(scope)] = False
                continue
            for stmt_id, call in self._calls_with_statements(scope):
                mode = self.lexical.get(stmt_id, (None, ()))[0]
                if mode in (OFF, MAYBE):
                    continue
                if forward_kind(evidence, call, scope) in (FORWARD, DIFFERENTIABLE):
                    found = True
                    break
            runs[id(scope)] = found
        for _ in range(len(self.scopes) + 1):
            changed = False
            for scope in self.scopes:
                if runs[id(scope)] or self.scope_mode(scope) in (OFF, MAYBE):
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
    def _model_calls(self, calls, scope: ast.AST) -> bool:
        """A forward or backward pass or an optimizer step among ``calls``, or a call of a function of this
        file that does one per call (not one that runs a whole loop of them, like ``train_epoch()``)."""
        for call in calls:
            if is_backward_call(call) or is_optimizer_step(call):
                return True
            if forward_kind(self.evidence, call, scope) in (FORWARD, DIFFERENTIABLE):
                return True
            site = self.site_of.get(id(call))
            if site is not None and self.step_work.get(id(site.callee)):
                return True
        return False

    def _step_work(self) -> dict[int, bool]:
        """The function does model work outside its own loops: one call of it is one step. (And
        ``loop_work``: it does model work inside a loop of its own, like ``train_epoch()``.)"""
        work: dict[int, bool] = {}
        self.loop_work = {}
        for _ in range(3):
            for scope in self.facts.scopes:
                statements = self.statements_in.get(id(scope), ())
                self.step_work = work
                if not work.get(id(scope)):
                    calls = [c for stmt in statements if not self.loops_at(stmt) for c in self.facts.calls_of(stmt)]
                    work[id(scope)] = self._model_calls(calls, scope)
                if not self.loop_work.get(id(scope)):
                    looped = [c for stmt in statements if self.loops_at(stmt) for c in self.facts.calls_of(stmt)]
                    self.loop_work[id(scope)] = self._model_calls(looped, scope)
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
                bool(site.loops) and self.is_hot_loop(site.loops[-1], site.caller) for site in self.sites_to.get(id(func), ())
            )
        for _ in range(len(self.facts.scopes) + 1):
            changed = False
            for func in self.facts.scopes:
                if per_step[id(func)]:
                    continue
                if any(not site.loops and per_step.get(id(site.caller)) for site in self.sites_to.get(id(func), ())):
                    per_step[id(func)] = changed = True
            if not changed:
                break
        return per_step

    # -- backward reachability ---------------------------------------------------------------------
    def dataflow(self, scope: ast.AST) -> Dataflow:
        """The scope's dataflow, counting arguments of local callees that backpropagate them as backward reads."""
        return self._dataflow_of([scope])

    def class_dataflow(self, cls: ast.ClassDef) -> Dataflow:
        """Every method of the class (and the functions nested in them) together: where a ``self.x`` kept
        in one method may be consumed. A method's return value flows to ``self.<method>`` in its callers."""
        methods = [(name, m) for (owner, name), m in self.facts.methods.items() if owner == cls.name]
        members = [m for _, m in methods]
        stack = list(members)
        while stack:
            for nested in self.facts.nested.get(id(stack.pop()), ()):
                members.append(nested)
                stack.append(nested)
        returns = []
        for name, method in methods:
            read: set[str] = set()
            for node in ast.walk(method):
                if isinstance(node, ast.Return) and node.value is not None:
                    read |= names_read(node.value)
            if read:
                returns.append(({f"self.{name}"}, read))
        flow = self._dataflow_of(members)
        flow.edges.extend(returns)
        return flow

    def file_dataflow(self) -> Dataflow:
        return self._dataflow_of(self.scopes)

    def _dataflow_of(self, scopes: list[ast.AST]) -> Dataflow:
        """The dataflow of ``scopes`` together; each scope's edges and backward reads are computed once."""
        consumed_by = getattr(self, "backprops_params", {})
        reads: list[set[str]] = []
        for scope in scopes:
            reads.extend(self._scope_reads(scope))
            for site in self.sites_from.get(id(scope), ()):
                consumed = consumed_by.get(id(site.callee), ())
                if consumed:
                    for parameter, argument in self.bound_arguments(site):
                        if parameter in consumed:
                            reads.append(names_read(argument))
        return Dataflow(lambda: [e for scope in scopes for e in self._scope_edges(scope)], reads)

    def _scope_reads(self, scope: ast.AST) -> list[set[str]]:
        found = self._reads.get(id(scope))
        if found is None:
            found = self._reads[id(scope)] = backward_reads(self.facts.calls_inside(scope))
        return found

    def _scope_edges(self, scope: ast.AST) -> list[tuple[set[str], set[str]]]:
        found = self._edges.get(id(scope))
        if found is None:
            facts = self.facts
            found = self._edges[id(scope)] = scope_edges(facts.stores_inside(scope), facts.calls_inside(scope), facts.loops_inside(scope))
        return found

    def _backpropagated_parameters(self) -> dict[int, set[str]]:
        """Parameters a function feeds to backward (itself or through a callee)."""
        found: dict[int, set[str]] = {}
        self.backprops_params = found
        for _ in range(3):
            changed = False
            for func in self.facts.scopes:
                flow = self.dataflow(func)
                if not flow.backward_reads:
                    continue
                params = set(self.parameters(func))
                consumed = {p for p in params if flow.reaches_backward({p})}
                if consumed - found.get(id(func), set()):
                    found[id(func)] = found.get(id(func), set()) | consumed
                    changed = True
            if not changed:
                break
        return found

    def _results_backpropagated(self) -> dict[int, bool]:
        """A backward pass is reachable from what the function returns: a caller feeds it to backward,
        or returns it to a caller that does (a training loop two calls up)."""
        result: dict[int, bool] = {
            id(f): f.name in BACKPROPAGATED_RETURNS for f in self.facts.scopes
        }
        flows = {}
        for _ in range(len(self.facts.scopes) + 1):
            changed = False
            for func in self.facts.scopes:
                if result[id(func)]:
                    continue
                for site in self.sites_to.get(id(func), ()):
                    caller = site.caller
                    flow = flows.get(id(caller))
                    if flow is None:
                        flow = flows[id(caller)] = self.dataflow(caller)
                    if self._site_result_backpropagated(site, flow, result):
                        result[id(func)] = changed = True
                        break
            if not changed:
                break
        return result

    def _site_result_backpropagated(self, site: CallSite, flow: Dataflow, result: dict[int, bool]) -> bool:
        call = site.call
        caller = site.caller
        inside_backward = self._backward_parts.get(id(caller))
        if inside_backward is None:
            inside_backward = self._backward_parts[id(caller)] = {
                id(node) for c in self.facts.calls_inside(caller) if is_backward_call(c) for node in ast.walk(c)
            }
        if id(call) in inside_backward:
            return True  # ``helper(x).sum().backward()``
        receivers = self._result_names(call, caller)
        if receivers and flow.reaches_backward(receivers):
            return True
        if isinstance(caller, ast.Module) or not result.get(id(caller)):
            return False
        parts = self._returned_parts.get(id(caller))
        if parts is None:
            nodes: set[int] = set()
            names: set[str] = set()
            for ret in self._returns(caller):
                if ret.value is not None:
                    nodes.update(id(n) for n in ast.walk(ret.value))
                    names |= names_read(ret.value)
            parts = self._returned_parts[id(caller)] = (nodes, names)
        if id(call) in parts[0]:
            return True  # ``return helper(x)`` in a function whose result is backpropagated
        return bool(receivers) and bool(flow.derived(receivers) & parts[1])

    def _result_names(self, call: ast.Call, scope: ast.AST) -> set[str]:
        """Names the result of ``call`` is assigned to in ``scope``."""
        table = self._call_targets.get(id(scope))
        if table is None:
            table = self._call_targets[id(scope)] = {}
            for store in self.facts.stores_inside(scope):
                if isinstance(store, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and store.value is not None:
                    targets = store.targets if isinstance(store, ast.Assign) else [store.target]
                    names = {n for t in targets for n in _flat_names(t)}
                    for inner in self.facts.calls_of(store):
                        table[id(inner)] = names
        return table.get(id(call), set())

    # -- forward membership ------------------------------------------------------------------------
    def _part_of_forward(self) -> dict[int, bool]:
        """Methods run by a module's forward (``self.predict(x)`` called from forward) belong to it."""
        part: dict[int, bool] = {}
        for func in self.facts.scopes:
            cls = self.facts.class_of(func)
            part[id(func)] = func.name == "forward" and cls is not None and cls.name in self.evidence.module_classes
        for _ in range(len(self.facts.scopes) + 1):
            changed = False
            for func in self.facts.scopes:
                if part[id(func)]:
                    continue
                sites = self.sites_to.get(id(func), ())
                if any(part.get(id(site.caller)) for site in sites):
                    part[id(func)] = changed = True
            if not changed:
                break
        return part

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

    # -- order -------------------------------------------------------------------------------------
    def bottom_up(self) -> list[ast.AST]:
        """Functions with their callees first (strongly connected groups in any order), nested ones
        left to their parents."""
        functions = [f for f in self.facts.scopes if id(f) not in self.facts.parent]
        index: dict[int, int] = {}
        low: dict[int, int] = {}
        on_stack: set[int] = set()
        stack: list[ast.AST] = []
        order: list[ast.AST] = []
        counter = 0
        callees = {
            id(f): [s.callee for s in self.sites_from.get(id(f), ()) if id(s.callee) not in self.facts.parent]
            for f in functions
        }
        for root in functions:
            if id(root) in index:
                continue
            work = [(root, iter(callees.get(id(root), ())))]
            index[id(root)] = low[id(root)] = counter
            counter += 1
            stack.append(root)
            on_stack.add(id(root))
            while work:
                node, children = work[-1]
                advanced = False
                for child in children:
                    if id(child) not in index:
                        index[id(child)] = low[id(child)] = counter
                        counter += 1
                        stack.append(child)
                        on_stack.add(id(child))
                        work.append((child, iter(callees.get(id(child), ()))))
                        advanced = True
                        break
                    if id(child) in on_stack:
                        low[id(node)] = min(low[id(node)], index[id(child)])
                if advanced:
                    continue
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[id(parent)] = min(low[id(parent)], low[id(node)])
                if low[id(node)] == index[id(node)]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(id(member))
                        group.append(member)
                        if member is node:
                            break
                    order.extend(group)
                    if len(group) > 1 or any(child is node for child in callees.get(id(node), ())):
                        self.recursive.update(id(member) for member in group)
        return order


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


def _flat_names(target: ast.AST) -> list[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _flat_names(e)]
    if isinstance(target, ast.Starred):
        return _flat_names(target.value)
    name = dotted(target)
    return [name] if name else []


def _is_static(func: ast.AST) -> bool:
    return any(last_name(dotted(d) or "") == "staticmethod" for d in func.decorator_list)


def _is_classmethod(func: ast.AST) -> bool:
    return any(last_name(dotted(d) or "") == "classmethod" for d in func.decorator_list)


__all__ = ["CallGraph", "CallSite", "ON", "OFF", "MAYBE", "is_backward_call", "is_optimizer_step"]
