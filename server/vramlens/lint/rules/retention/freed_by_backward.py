"""What the backward of the same step has already freed.

A backward without ``retain_graph`` releases the saved activations of every node it runs through, so a value
the step's own loss was computed from keeps its tensor and a graph with nothing saved in it, whether it is
kept before or after that backward: ``loss.backward(); losses.append(loss)``, ``outs.append(out)`` then
``out.sum().backward()``. The graph's nodes still stay (host memory, hundreds of them a step for a deep
model), so keeping such values every step is still a leak: only its words change. Only a backward that runs on every pass of the step counts (one under an ``if``
frees nothing for certain), and only the values it runs through: its root and what that root was computed
from in the same step. The step is the innermost loop's body, or a training step's body, whose returned
loss the framework backpropagates.
"""

from __future__ import annotations

import ast

from ...facts.dataflow import backward_targets, names_read
from ...facts.evidence import returned_loss
from ...facts.library import BACKPROPAGATED_RETURNS
from ...parse.syntax import dotted, flat_elements, is_backward_call, method_name, sets_keyword
from ...walker.context import LintContext

_KEEPS_GRAPH = ("retain_graph", "create_graph")
_ROUNDS = 8  # assignment chains in one step are short; the bound keeps the fixed point cheap


def freed_by_the_steps_backward(values: list[ast.AST], ctx: LintContext) -> bool:
    """Every value in ``values`` is one the step's unconditional backward runs through."""
    step = _step(ctx)
    if step is None or not values:
        return False
    key = ("freed-by-backward", id(step))
    through = ctx.memo.get(key)
    if through is None:
        through = ctx.memo[key] = _run_through(step, ctx)
    return bool(through) and all(_text(value) in through for value in values)


def _step(ctx: LintContext) -> ast.AST | None:
    """The innermost loop, or the function itself when the value is kept outside any loop."""
    if ctx.loops:
        return ctx.loops[-1]
    node = ctx.scope.node
    return None if isinstance(node, ast.Module) else node


def _run_through(step: ast.AST, ctx: LintContext) -> frozenset[str]:
    """The expressions (as source text) the step's unconditional backwards differentiate, grown through the
    step's assignments to what they were computed from."""
    body = list(_every_pass(step.body))
    roots: list[ast.AST] = []
    for stmt in body:
        for call in ctx.facts.calls_of(stmt):  # the statement's own calls, not those of the blocks it holds
            # ``autograd.grad`` runs only the nodes on the way to its inputs: the others keep what they saved.
            if is_backward_call(call) and method_name(call) != "grad" and not _keeps_graph(call):
                roots.extend(backward_targets(call))
    if isinstance(step, (ast.FunctionDef, ast.AsyncFunctionDef)) and step.name in BACKPROPAGATED_RETURNS \
            and _framework_backpropagates_the_return(ctx):
        roots.extend(returned_loss(stmt.value) for stmt in body if isinstance(stmt, ast.Return) and stmt.value is not None)
    if not roots:
        return frozenset()
    through: set[str] = set()
    for root in roots:
        through |= _reads(root)
    stores = [s for s in ctx.facts.stores_inside(step) if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and s.value is not None]
    for _ in range(_ROUNDS):
        grown = False
        for store in stores:
            targets = store.targets if isinstance(store, ast.Assign) else [store.target]
            if any(_text(part) in through for target in targets for part in flat_elements(target)):
                added = _reads(store.value) - through
                if added:
                    through |= added
                    grown = True
        if not grown:
            break
    return frozenset(through)


def _every_pass(stmts: list[ast.stmt]):
    """The statements that run on every pass through ``stmts``: not under an ``if``, a nested loop or a
    handler; inside ``with`` blocks and ``try`` bodies."""
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _every_pass(stmt.body)
        elif isinstance(stmt, ast.Try):
            yield from _every_pass(stmt.body)
            yield from _every_pass(stmt.finalbody)


def _keeps_graph(call: ast.Call) -> bool:
    """``retain_graph=`` or ``create_graph=`` anything but a literal false: the graph may outlive the call."""
    return sets_keyword(call, _KEEPS_GRAPH)


def _framework_backpropagates_the_return(ctx: LintContext) -> bool:
    """A training step of a class that leaves optimization to the framework (no
    ``self.automatic_optimization = False``): the framework backpropagates what the step returns."""
    cls = ctx.scope.cls
    if cls is None:
        return False
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is False \
                and any(dotted(t) in {"self.automatic_optimization", "automatic_optimization"} for t in node.targets):
            return False
    return True


def _reads(node: ast.AST) -> set[str]:
    """The whole expression and every name (dotted, and each prefix of it) it reads."""
    return {_text(node)} | names_read(node)


def _text(node: ast.AST) -> str:
    return dotted(node) or ast.unparse(node)
