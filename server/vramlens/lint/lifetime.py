"""How long a container or accumulator lives compared with the values stored into it.

A store is only a leak when the place outlives the iteration (a name bound before a
training or data loop and never re-created in it) or the call (an attribute of self, of a
class, or a module global), and when the graph it keeps is not backpropagated on purpose.
"""

from __future__ import annotations

import ast

from .syntax import (
    assigned_names,
    dotted,
    is_backward_call,
    is_small_constant_loop,
    iter_nodes,
    iterates_data,
    names_in,
)
from .walker import LintContext

OUTLIVES_CALL = "call"
OUTLIVES_ITERATION = "iteration"



def _loop_facts(loop: ast.AST, ctx: LintContext) -> tuple[bool, set[str]]:
    """(is a training or data loop, names re-created inside it), computed once per loop."""
    key = ("loop", id(loop))
    facts = ctx.memo.get(key)
    if facts is None:
        repeating = not is_small_constant_loop(loop) and (ctx.facts.trains(loop) or iterates_data(loop))
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


def in_module_method(ctx: LintContext) -> bool:
    """Inside an nn.Module's methods loops build the forward graph on purpose (time steps, images, levels)."""
    cls = ctx.scope.cls
    return cls is not None and cls.name in ctx.facts.module_classes


def enclosing_repeating_loop(name: str, ctx: LintContext) -> ast.AST | None:
    """The innermost training/data loop whose iterations all share ``name``; None if it is fresh each time."""
    if in_module_method(ctx) and not (is_attribute_store(name, ctx) or is_global_name(name, ctx)):
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
    return head in {"self", "cls"} or (cls is not None and head == cls.name) or head in ctx.facts.module_classes


def is_global_name(name: str, ctx: LintContext) -> bool:
    head = name.split(".", 1)[0]
    scope = ctx.scope
    if isinstance(scope.node, ast.Module):
        return False
    if head in scope.declared_global:
        return True
    return head in ctx.facts.globals and head not in _scope_assigned(ctx)


def lifetime(name: str, ctx: LintContext) -> str | None:
    """OUTLIVES_CALL, OUTLIVES_ITERATION or None when the place is as short-lived as the value."""
    resolved = ctx.state.resolve(name)
    if enclosing_repeating_loop(resolved, ctx) is not None:
        return OUTLIVES_ITERATION
    if any(rebound_in(loop, resolved, ctx) for loop in ctx.loops):
        return None
    if is_attribute_store(resolved, ctx) or is_global_name(resolved, ctx):
        if isinstance(ctx.scope.node, ast.Module) or resolved in _scope_assigned(ctx):
            return None  # re-created on every call: holds at most one call's graph
        return OUTLIVES_CALL
    return None


def consumption_scope(name: str, ctx: LintContext) -> ast.AST:
    """Where a later backward through ``name`` would be written."""
    if is_attribute_store(name, ctx) and ctx.scope.cls is not None:
        return ctx.scope.cls
    if is_attribute_store(name, ctx) or is_global_name(name, ctx):
        return ctx.tree
    return ctx.scope.node


def _dataflow(scope: ast.AST, ctx: LintContext) -> tuple[list[tuple[set[str], set[str]]], list[set[str]]]:
    """(target names, value names) of every assignment in ``scope``, and the names each backward call reads."""
    key = ("dataflow", id(scope))
    flow = ctx.memo.get(key)
    if flow is None:
        stores, calls = _stores_and_calls(scope, ctx)
        backward_reads = [names_in(call) for call in calls if is_backward_call(call)]
        edges = []
        if backward_reads:  # without a backward pass nothing is consumed: skip the assignments
            for node in stores:
                if isinstance(node, ast.Delete) or node.value is None:
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                stored = {dotted(sub) for t in targets for sub in iter_nodes(t) if isinstance(sub, (ast.Name, ast.Attribute))}
                edges.append((stored - {None}, names_in(node.value)))
        flow = ctx.memo[key] = (edges, backward_reads)
    return flow


def _stores_and_calls(scope: ast.AST, ctx: LintContext) -> tuple[list[ast.stmt], list[ast.Call]]:
    """A function's own statements; for a class, all its methods; for the module, the whole file."""
    facts = ctx.facts
    if scope is ctx.tree:
        return facts.all_stores, facts.all_calls
    if isinstance(scope, ast.ClassDef):
        members = [scope, *(m for (owner, _), m in facts.methods.items() if owner == scope.name)]
        return (
            [s for m in members for s in facts.stores_inside(m)],
            [c for m in members for c in facts.calls_inside(m)],
        )
    return facts.stores_inside(scope), facts.calls_inside(scope)


def backpropagated(name: str, ctx: LintContext) -> bool:
    """True when the graph kept in ``name`` (or in anything computed from it) is fed to backward."""
    edges, backward_reads = _dataflow(consumption_scope(ctx.state.resolve(name), ctx), ctx)
    if not backward_reads:
        return False
    derived = {name, ctx.state.resolve(name)}
    for _ in range(4):
        grown = False
        for stored, read in edges:
            if read & derived and not stored <= derived:
                derived |= stored
                grown = True
        if not grown:
            break
    return any(read & derived for read in backward_reads)


def _bound_names(node: ast.AST) -> set[str]:
    """The names an assignment binds (every name in its targets) or a ``.detach_()`` call detaches."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {name for target in targets for sub in iter_nodes(target) if (name := dotted(sub))}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "detach_":
        name = dotted(node.func.value)
        return {name} if name else set()
    return set()


def _binders(loop: ast.AST, ctx: LintContext) -> dict[str, list[ast.AST]]:
    """Name -> the nodes of the loop's body that bind or detach it, computed once per loop."""
    key = ("binders", id(loop))
    binders = ctx.memo.get(key)
    if binders is None:
        binders = ctx.memo[key] = {}
        for stmt in loop.body:
            for node in iter_nodes(stmt):
                if type(node) in _BINDING_NODES:
                    for name in _bound_names(node):
                        binders.setdefault(name, []).append(node)
    return binders


_BINDING_NODES = frozenset({ast.Assign, ast.AnnAssign, ast.Call})


def carried_across(loop_stack: list[ast.AST], name: str, stmt: ast.stmt, ctx: LintContext) -> ast.AST | None:
    """The training or data loop across whose iterations ``stmt`` threads ``name`` into itself.

    ``h = cell(x, h)`` carries ``h`` unless another statement of the loop re-binds or detaches it.
    """
    if in_module_method(ctx):
        return None
    for loop in reversed(loop_stack):
        if any(node is not stmt for node in _binders(loop, ctx).get(name, ())):
            return None
        if is_repeating_loop(loop, ctx):
            return loop
    return None

