"""The file's call graph: which calls reach functions of this file, and what each function's callers imply.

Built once per file from syntax and module evidence, before any taint is computed:

- call sites with their lexical grad mode (``with torch.no_grad():``, ``ExitStack.enter_context``) and the
  loops around them;
- per function: the grad mode it runs in (its decorator, a no_grad ``__call__`` of its class, or every
  caller calling it with recording off — ``with torch.no_grad(): main()`` included), whether it trains
  (itself or through a callee), runs a forward pass, is called on every iteration of a loop, is part of a
  module's forward, and whether a backward pass is reachable from what it returns;
- module evidence for parameters that callers pass modules to.

This module resolves calls and collects the sites; contexts.py derives what callers and callees imply,
reachability.py whether a backward pass is reachable.
"""

from __future__ import annotations

import ast

from ..facts.evidence import Evidence
from ..facts.file_facts import FileFacts
from ..facts.gradmode import OFF, GradModes
from ..facts.library import FORWARD_HOOK_REGISTRATIONS
from ..parse.syntax import call_name, dotted, last_name, method_name, own_returns
from .call_sites import CALLBACK, CLOSURE, OVERRIDE, CallSite
from .contexts import Contexts
from .reachability import Reachability

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class CallGraph(Contexts, Reachability):
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
        self.override_sites_to: dict[int, list[CallSite]] = {}  # id(override) -> ``self.m()`` calls dispatching to it
        # ``self.loss_fn(batch)`` where ``self.loss_fn = Loss()`` of this file: id(call) -> ``Loss.forward``, and
        # id(caller) -> those forwards (walked first, so that what each returns is known)
        self.forward_of: dict[int, ast.AST] = {}
        self.forwards_from: dict[int, list[ast.AST]] = {}
        self._subclasses: dict[str, list[ast.ClassDef]] = {}
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
        # id() of functions handed to any hook registration (``attach_hooks``, ``run_with_hooks``, a tensor's
        # ``register_hook``): they run inside somebody else's forward or backward, at its grad mode
        self.hooks: set[int] = set()
        # id() of functions that run a forward both with recording on and under no_grad (by a branch on a training
        # flag, say): the grad mode of a call of them is theirs, not their caller's
        self.picks_grad_mode: set[int] = set()
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
            cls = self.facts.enclosing_class(scope)
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
            cls = self.facts.enclosing_class(scope)
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
            cls = self.facts.enclosing_class(scope)
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
            for base in self.local_bases(cls):  # ``self.value = AverageNumber()`` in the base's ``__init__``
                found.update(self._class_instances(base))
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
                if callee is None:
                    forward = self._instance_forward(call, scope)
                    if forward is not None:
                        self.forward_of[id(call)] = forward
                        self.forwards_from.setdefault(id(scope), []).append(forward)
                if callee is not None:
                    site = CallSite(call, scope, callee, mode, loops, skips_self, indirect)
                    sites.append(site)
                    self.sites_to.setdefault(id(callee), []).append(site)
                    self.site_of[id(call)] = site
                for override in self._overrides(call, scope):
                    site = CallSite(call, scope, override, mode, loops, True, OVERRIDE)
                    self.override_sites_to.setdefault(id(override), []).append(site)
                for function in self._callbacks(call, scope, exclude=callee):
                    site = CallSite(call, scope, function, mode, loops, False, CALLBACK)
                    sites.append(site)
                    self.sites_to.setdefault(id(function), []).append(site)
                    self.callbacks_of.setdefault(id(call), []).append(site)
            self.sites_from[id(scope)] = sites
            for call in self.facts.calls_inside(scope):
                if "hook" not in method_name(call).lower():
                    continue
                forward_hook = isinstance(call.func, ast.Attribute) and call.func.attr in FORWARD_HOOK_REGISTRATIONS
                for argument in hook_arguments(call):
                    target = self._hook_function(argument, scope)
                    if target is not None:
                        self.hooks.add(id(target))
                        if forward_hook and argument is call.args[0]:
                            self.forward_hooks.add(id(target))  # runs inside the module's forward

    def _instance_forward(self, call: ast.Call, scope: ast.AST) -> ast.AST | None:
        """The ``forward`` of the class of this file whose instance ``call`` calls (``self.loss_fn(batch)``)."""
        name = dotted(call.func)
        if not name or name in {"self", "cls"}:
            return None
        cls = self.instance_class(name, scope)
        return self.method(cls, "forward") if cls is not None else None

    def _overrides(self, call: ast.Call, scope: ast.AST) -> list[ast.AST]:
        """Methods of subclasses (in this file) that ``self.m(...)`` also runs when ``self`` is one of them."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in {"self", "cls"}):
            return []
        cls = self.facts.enclosing_class(scope)
        if cls is None:
            return []
        found = []
        for sub in self.subclasses(cls):
            method = self.facts.methods.get((sub.name, func.attr))
            if method is not None and method is not scope and method not in found:
                found.append(method)
        return found

    def subclasses(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """Classes of this file deriving from ``cls``, directly or not."""
        known = self._subclasses.get(cls.name)
        if known is None:
            known = self._subclasses[cls.name] = []
            frontier = [cls]
            while frontier:
                base = frontier.pop()
                for other in self.facts.classes.values():
                    if other is not cls and other not in known and base in self.local_bases(other):
                        known.append(other)
                        frontier.append(other)
        return known

    def callers_of(self, func: ast.AST) -> list[CallSite]:
        """Every call site that may run ``func``: direct calls, callbacks and ``self.m()`` reaching an override."""
        return [*self.sites_to.get(id(func), ()), *self.override_sites_to.get(id(func), ())]

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
            returned = {n.value.id for n in own_returns(factory) if isinstance(n.value, ast.Name)}
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
            + [m for m in self.forwards_from.get(id(f), ()) if id(m) not in self.facts.parent]
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


def _is_static(func: ast.AST) -> bool:
    return any(last_name(dotted(d) or "") == "staticmethod" for d in func.decorator_list)


def _is_classmethod(func: ast.AST) -> bool:
    return any(last_name(dotted(d) or "") == "classmethod" for d in func.decorator_list)


def hook_arguments(call: ast.Call) -> list[ast.AST]:
    """What a hook registration is handed: its arguments, and the elements of list or tuple arguments
    (``run_with_hooks(x, fwd_hooks=[("blocks.0", fn)])``)."""
    found = []
    for argument in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(argument, (ast.List, ast.Tuple)):
            for element in argument.elts:
                found.extend(element.elts if isinstance(element, (ast.List, ast.Tuple)) else [element])
        else:
            found.append(argument)
    return found
