"""How long a container or accumulator lives compared with the values stored into it.

A store is only a leak when the place outlives the iteration (a name bound before a
training or data loop and never re-created in it) or the call (an attribute of self, of a
class, or a module global), and when the graph it keeps is not backpropagated on purpose.
"""

from __future__ import annotations

import ast

from ...facts.dataflow import Dataflow, names_read
from ...parse.paths import is_test_support
from ...parse.syntax import assigned_names, base_dotted, dotted, iter_nodes
from ...walker.context import LintContext
from .object_state import reinitialised_per_call

OUTLIVES_CALL = "call"
OUTLIVES_ITERATION = "iteration"


def _loop_facts(loop: ast.AST, ctx: LintContext) -> tuple[bool, set[str]]:
    """(is a training or data loop, names re-created inside it), computed once per loop."""
    key = ("loop", id(loop))
    facts = ctx.memo.get(key)
    if facts is None:
        repeating = ctx.graph.is_repeating_loop(loop, ctx.scope.node)
        facts = ctx.memo[key] = (repeating, assigned_names(ctx.facts.stores_inside(loop), ctx.facts.calls_inside(loop)))
    return facts


def _scope_assigned(ctx: LintContext) -> set[str]:
    key = ("assigned", id(ctx.scope.node))
    names = ctx.memo.get(key)
    if names is None:
        node = ctx.scope.node
        names = ctx.memo[key] = assigned_names(ctx.facts.stores_inside(node), ctx.facts.calls_inside(node))
    return names


def is_repeating_loop(loop: ast.AST, ctx: LintContext) -> bool:
    return _loop_facts(loop, ctx)[0]


def rebound_in(loop: ast.AST, name: str, ctx: LintContext) -> bool:
    return name in _loop_facts(loop, ctx)[1]


def in_forward_computation(ctx: LintContext) -> bool:
    """Inside the methods an nn.Module's forward runs, and the functions of the file it calls, loops build the
    forward graph on purpose (time steps, images, levels, solver iterations). A module's own training or data loop
    (``def fit(self, loader)``) is not one."""
    node = ctx.scope.node
    cls = ctx.scope.cls
    if isinstance(node, ast.Module):
        return False
    if cls is None:  # a function of the file that a module's forward calls (an unrolled solver, a sampler step)
        return bool(ctx.graph.part_of_forward.get(id(node)))
    if cls.name not in ctx.evidence.module_classes:
        return False
    key = ("forward-computation", id(node))
    known = ctx.memo.get(key)
    if known is None:
        graph = ctx.graph
        if graph.part_of_forward.get(id(node)):
            known = True
        else:
            known = not graph.trains.get(id(node)) and not any(
                graph.is_repeating_loop(loop, node) for loop in ctx.facts.loops_inside(node)
            )
        ctx.memo[key] = known
    return known


def enclosing_repeating_loop(name: str, ctx: LintContext) -> ast.AST | None:
    """The innermost training/data loop whose iterations all share ``name``; None if it is fresh each time."""
    if in_forward_computation(ctx) and not (is_attribute_store(name, ctx) or is_global_name(name, ctx)):
        return None
    for loop in reversed(ctx.loops):
        if rebound_in(loop, name, ctx):
            return None
        if is_repeating_loop(loop, ctx):
            return loop
    return None


def is_attribute_store(name: str, ctx: LintContext) -> bool:
    head = name.split(".", 1)[0]
    if "." not in name:
        return False
    cls = ctx.scope.cls
    return head in {"self", "cls"} or (cls is not None and head == cls.name) or head in ctx.evidence.module_classes


def is_global_name(name: str, ctx: LintContext) -> bool:
    head = name.split(".", 1)[0]
    scope = ctx.scope
    if isinstance(scope.node, ast.Module):
        return False
    if head in scope.declared_global:
        return True
    return head in ctx.facts.globals and head not in _scope_assigned(ctx) and head not in _parameters(ctx)


def _parameters(ctx: LintContext) -> set[str]:
    node = ctx.scope.node
    args = node.args
    return {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}


def lifetime(name: str, ctx: LintContext) -> str | None:
    """OUTLIVES_CALL, OUTLIVES_ITERATION or None when the place is as short-lived as the value."""
    resolved = ctx.state.resolve(name)
    if reinitialised_per_call(resolved, ctx, ctx.line):
        return None  # every call starts it afresh (``init_hidden()`` first): it holds one call's values
    if enclosing_repeating_loop(resolved, ctx) is not None:
        return None if builds_the_result(resolved, ctx) else OUTLIVES_ITERATION
    if any(rebound_in(loop, resolved, ctx) for loop in ctx.loops):
        return None
    if is_attribute_store(resolved, ctx) or is_global_name(resolved, ctx):
        if isinstance(ctx.scope.node, ast.Module) or resolved in _scope_assigned(ctx):
            return None  # re-created on every call: holds at most one call's graph
        if is_test_support(ctx.path):
            return None  # a test's objects live as long as the test: its cost, not a training run's
        return OUTLIVES_CALL
    return None


def builds_the_result(name: str, ctx: LintContext) -> bool:
    """A local list that a module's method fills step by step and returns (``mel_outputs += [out]`` in a
    decoding loop): the stored values are the method's output, kept for whoever called it. Only in a method
    of a module class that trains nowhere (a training loop's list of losses is no result)."""
    node = ctx.scope.node
    cls = ctx.scope.cls
    if "." in name or cls is None or cls.name not in ctx.evidence.module_classes or isinstance(node, ast.Module):
        return False
    if ctx.graph.trains.get(id(node)) or is_global_name(name, ctx):
        return False
    return name in returned_names(ctx)


def returned_names(ctx: LintContext) -> set[str]:
    """``names_reaching_return`` of the function being checked, worked out once per function."""
    node = ctx.scope.node
    key = ("returned-names", id(node))
    returned = ctx.memo.get(key)
    if returned is None:
        returned = ctx.memo[key] = names_reaching_return(node)
    return returned


def names_reaching_return(func: ast.AST) -> set[str]:
    """Local names whose value flows into what ``func`` returns, through assignments (``a, b = f(a, b)``)."""
    found: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and node.value is not None:
            found |= {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
    assigns = [n for n in ast.walk(func) if isinstance(n, ast.Assign)]
    changed = True
    while changed:
        changed = False
        for assign in assigns:
            targets = {n.id for t in assign.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if targets & found:
                sources = {n.id for n in ast.walk(assign.value) if isinstance(n, ast.Name)} - found
                if sources:
                    found |= sources
                    changed = True
    return found


def _consumption_flow(name: str, ctx: LintContext) -> Dataflow:
    """The dataflow where a later backward through ``name`` would be written: the function for a local,
    the class for ``self.x`` (every method), the whole file for globals and other objects' attributes."""
    graph = ctx.graph
    if is_attribute_store(name, ctx) and ctx.scope.cls is not None and name.startswith(("self.", "cls.")):
        key = ("class-flow", id(ctx.scope.cls))
        flow = ctx.memo.get(key)
        if flow is None:
            flow = ctx.memo[key] = graph.class_dataflow(ctx.scope.cls)
        return flow
    if "." in name or is_global_name(name, ctx) or isinstance(ctx.scope.node, ast.Module):
        flow = ctx.memo.get("file-flow")
        if flow is None:
            flow = ctx.memo["file-flow"] = graph.file_dataflow()
        return flow
    key = ("flow", id(ctx.scope.node))
    flow = ctx.memo.get(key)
    if flow is None:
        flow = ctx.memo[key] = graph.dataflow(ctx.scope.node)
    return flow


def backpropagated(name: str, ctx: LintContext) -> bool:
    """True when the graph kept in ``name`` (or in anything computed from it) is fed to backward.

    An attribute kept on ``self`` is also looked for as ``other.<attr>`` elsewhere in the file, where
    another function reaches the same object through an instance (``policy.saved_log_probs``)."""
    resolved = ctx.state.resolve(name)
    seeds = {name, resolved}
    if _consumption_flow(resolved, ctx).reaches_backward(seeds):
        return True
    if resolved.startswith("self.") and resolved.count(".") == 1:
        attribute = resolved.split(".", 1)[1]
        flow = ctx.memo.get("file-flow")
        if flow is None:
            flow = ctx.memo["file-flow"] = ctx.graph.file_dataflow()
        others = {n for stored, read in flow.edges for n in read if n.endswith(f".{attribute}")}
        others |= {n for read in flow.backward_reads for n in read if n.endswith(f".{attribute}")}
        return bool(others) and flow.reaches_backward(others)
    return False


def _bound_names(node: ast.AST) -> set[str]:
    """The names an assignment binds (every name in its targets) or a ``.detach_()`` call detaches."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {name for target in targets for sub in iter_nodes(target) if (name := dotted(sub))}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "detach_":
        name = base_dotted(node.func.value)  # ``hidden[0].detach_()`` detaches (part of) ``hidden``
        return {name} if name else set()
    return set()


def _binders(loop: ast.AST, ctx: LintContext) -> dict[str, list[ast.AST]]:
    """Name -> the nodes of the loop's body that reset it: detach it in place, or bind it on every
    iteration, or bind it to a value without history (``h = h.detach()`` under ``if step % k == 0:``).
    Computed once per loop."""
    key = ("binders", id(loop))
    binders = ctx.memo.get(key)
    if binders is None:
        binders = ctx.memo[key] = {}
        always = _unconditional(loop.body)
        for stmt in loop.body:
            for node in iter_nodes(stmt):
                kind = type(node)
                if kind not in _BINDING_NODES:
                    continue
                if kind is ast.Call:
                    names = _bound_names(node) | set(_detached_by_callee(node, ctx))
                elif id(node) in always or _clean_value(node.value) or _clean_local_result(node.value, ctx):
                    names = _bound_names(node)
                else:
                    continue  # a conditional binding to another graph-carrying value is no reset
                for name in names:
                    binders.setdefault(name, []).append(node)
    return binders


def _clean_local_result(value: ast.AST | None, ctx: LintContext) -> bool:
    """``hidden = repackage_hidden(hidden)`` where that function of this file returns no graph."""
    if not isinstance(value, ast.Call):
        return False
    site = ctx.graph.site_of.get(id(value))
    summary = ctx.summaries.get(id(site.callee)) if site is not None else None
    return summary is not None and not summary.returns


def _unconditional(stmts: list[ast.stmt]) -> set[int]:
    """ids of the statements that run on every pass through ``stmts`` (through with and try bodies)."""
    found: set[int] = set()
    for stmt in stmts:
        found.add(id(stmt))
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            found |= _unconditional(stmt.body)
        elif isinstance(stmt, ast.Try):
            found |= _unconditional(stmt.body)
    return found


def _clean_value(value: ast.AST | None) -> bool:
    """A value that holds no history: a literal, None, ``x.detach()``, ``x.item()``, a new tensor."""
    if value is None or isinstance(value, (ast.Constant, ast.List, ast.Dict, ast.Tuple, ast.Set)):
        return not isinstance(value, (ast.List, ast.Tuple, ast.Set)) or all(_clean_value(e) for e in value.elts)
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else (func.id if isinstance(func, ast.Name) else "")
        return name in {"detach", "item", "tolist", "numpy", "zeros", "ones", "zeros_like", "ones_like", "empty", "full", "float", "int"}
    return False


def _detached_by_callee(call: ast.Call, ctx: LintContext) -> list[str]:
    """``repackage(hidden)`` where that function of this file detaches its parameter in place."""
    site = ctx.graph.site_of.get(id(call))
    if site is None:
        return []
    summary = ctx.summaries.get(id(site.callee))
    if summary is None or not summary.detaches:
        return []
    return [n for p, a in ctx.graph.bound_arguments(site) if p in summary.detaches and (n := dotted(a))]


_BINDING_NODES = frozenset({ast.Assign, ast.AnnAssign, ast.Call})


def carried_across(loop_stack: list[ast.AST], name: str, stmt: ast.stmt, ctx: LintContext) -> ast.AST | None:
    """The training or data loop across whose iterations ``stmt`` threads ``name`` into itself.

    ``h = cell(x, h)`` carries ``h`` unless another statement of the loop re-binds or detaches it.
    """
    if in_forward_computation(ctx) or _reset_just_before(stmt, name, ctx):
        return None
    for loop in reversed(loop_stack):
        if any(node is not stmt for node in _binders(loop, ctx).get(name, ())):
            return None
        if is_repeating_loop(loop, ctx):
            return loop
    return None


def _reset_just_before(stmt: ast.stmt, name: str, ctx: LintContext) -> bool:
    """An earlier statement of the same block, or of a block that encloses it inside the innermost loop, binds
    ``name`` afresh (``g = grad(a)`` then ``g = g + grad(b)``; ``x = sample(...)`` then ``if delta: x = image +
    x``): every pass that reaches ``stmt`` ran that statement first and starts from its value, not from the
    previous iteration's."""
    current = stmt
    for owner in reversed(ctx.blocks):
        if any(_binds_afresh(earlier, name) for earlier in _before_in(owner, current)):
            return True
        if isinstance(owner, (ast.For, ast.AsyncFor, ast.While)):
            return False  # what comes before the loop runs once, not once per iteration
        current = owner
    return not ctx.blocks and any(_binds_afresh(earlier, name) for earlier in ctx.siblings(stmt)[0])


def _before_in(owner: ast.AST, stmt: ast.stmt) -> list[ast.stmt]:
    """The statements before ``stmt`` in the list of ``owner`` (a body, an else branch, a finally block) that
    holds it."""
    for field in ("body", "orelse", "finalbody"):
        stmts = getattr(owner, field, None) or []
        for index, candidate in enumerate(stmts):
            if candidate is stmt:
                return stmts[:index]
    return []


def _binds_afresh(earlier: ast.stmt, name: str) -> bool:
    return (isinstance(earlier, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in earlier.targets)
            and name not in names_read(earlier.value))
