"""retain-graph-in-loop: backward(retain_graph=True) or create_graph=True on every iteration.

``retain_graph=True`` keeps the saved activations until nothing references the graph any more. A
gradient taken with ``autograd.grad(..., retain_graph=True)`` (a gradient penalty, a per-layer norm)
and followed in the same iteration by the final ``loss.backward()`` is the intended use: that backward
frees the graph, as does the caller's backward through what such a helper returns. A
``backward(retain_graph=True)`` on every iteration is reported — the loop may be in a caller, as for an
optimizer closure or a training-step function called once per batch. ``x.backward(create_graph=True)`` without
``inputs=`` in any function is reported too, whether or not its loop is in the file: it leaves graph-carrying
gradients in ``.grad`` (a reference cycle), where ``autograd.grad`` would only return them.
"""

from __future__ import annotations

import ast

from ...findings import Code
from ...parse.syntax import is_backward_call, is_small_constant_loop
from ...walker.rule import Rule
from ...walker.context import LintContext

RULE = "retain-graph-in-loop"
CODES = (
    Code(
        "VL301", RULE, "warning",
        "backward(retain_graph=True) or create_graph=True inside a loop",
        finds=(
            "`backward(retain_graph=True)` on every iteration of a loop, or in a function called on every "
            "iteration (an optimizer closure, a training step); `backward(create_graph=True)` there (it writes "
            "gradients with a graph into `.grad`), and `x.backward(create_graph=True)` without `inputs=` in any "
            "function, whether or not its loop is in the file (the graph-carrying gradients stay in `.grad`, a "
            "reference cycle PyTorch warns of); not `autograd.grad(..., retain_graph=True)` followed by a backward "
            "in the same iteration, nor in a helper whose result the caller backpropagates, nor "
            "`autograd.grad(..., create_graph=True)` without `retain_graph` (its gradients are meant to be "
            "differentiated, and their graph lives exactly as long as they do)"
        ),
        fix="—",
        why=(
            "`retain_graph=True` keeps the saved activations until nothing references the graph, so each iteration "
            "starts with the previous one's still allocated; `create_graph=True` leaves gradients that carry a "
            "graph in `.grad`, a reference cycle PyTorch warns of."
        ),
        example=(
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward(retain_graph=True)\n"
            "    optimizer.step()"
        ),
    ),
)


_FLAGS = ("retain_graph", "create_graph")


def _flag_set(call: ast.Call) -> str | None:
    for keyword in call.keywords:
        if keyword.arg in _FLAGS and isinstance(keyword.value, ast.Constant) and keyword.value.value is True:
            return keyword.arg
    return None


def _retains(call: ast.Call) -> bool:
    return any(k.arg == "retain_graph" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords)


def _frees(call: ast.Call) -> bool:
    """A backward pass without retain_graph: it frees the graph it runs through."""
    if not is_backward_call(call):
        return False
    for keyword in call.keywords:
        if keyword.arg in _FLAGS:
            return isinstance(keyword.value, ast.Constant) and keyword.value.value in (False, None)
    return True


def _stores_graph_in_grads(call: ast.Call) -> bool:
    """``loss.backward(create_graph=True)`` writes gradients with a graph into every parameter's ``.grad``
    (a reference cycle parameter -> grad -> graph -> parameter); ``autograd.grad`` only returns them."""
    return isinstance(call.func, ast.Attribute) and call.func.attr in {"backward", "manual_backward"}


def _into_every_grad(call: ast.Call) -> bool:
    """``backward(create_graph=True)`` without ``inputs=``: gradients with a graph land in every leaf's ``.grad``,
    parameters included, and outlive the call (PyTorch warns of the leak)."""
    return _stores_graph_in_grads(call) and not any(k.arg == "inputs" for k in call.keywords)


class RetainGraphInLoop(Rule):
    codes = CODES

    def check_call(self, call: ast.Call, ctx: LintContext) -> None:
        if not is_backward_call(call):
            return
        flag = _flag_set(call)
        if flag is None:
            return
        if flag == "create_graph" and not _stores_graph_in_grads(call) and not _retains(call):
            # ``autograd.grad(..., create_graph=True)`` returns gradients that are meant to be differentiated
            # (a gradient penalty): their graph lives exactly as long as they do, which the retained-graph
            # checks follow. Only ``backward(create_graph=True)`` parks a graph in every ``.grad``.
            return
        repeating = [loop for loop in ctx.loops if not is_small_constant_loop(loop)]
        in_callers_loop = not repeating and bool(ctx.graph.in_loop.get(id(ctx.scope.node)))
        if not repeating and not in_callers_loop:
            if flag == "create_graph" and _into_every_grad(call) and not isinstance(ctx.scope.node, ast.Module):
                self._report_graph_in_grads(call, ctx)  # whoever calls it again, the grads keep the graph
            return
        if not _stores_graph_in_grads(call):  # autograd.grad: exempt when a later backward frees the graph
            if self._freed_later(call, repeating[-1] if repeating else ctx.scope.node, ctx):
                return
            if in_callers_loop and ctx.graph.result_backpropagated.get(id(ctx.scope.node)):
                return  # a gradient penalty: the caller backpropagates what it returns, freeing the graph
        where = "inside a loop" if repeating else f"in `{ctx.scope.name}`, which runs on every iteration of its caller's loop,"
        message = (
            f"{flag}=True {where} keeps the saved activations (and, with create_graph, a graph of the "
            "gradients) alive for as long as anything references the graph, so memory can grow every "
            "iteration; sum the losses and call backward once, or drop the flag on the last use."
        )
        ctx.report("VL301", call, message)

    def _report_graph_in_grads(self, call: ast.Call, ctx: LintContext) -> None:
        message = (
            f"backward(create_graph=True) in `{ctx.scope.name}` writes gradients that carry a graph into the "
            "`.grad` of every tensor it reaches (a reference cycle: tensor -> grad -> graph -> tensor), so each "
            "call's graph can stay alive after the step; take the gradients with torch.autograd.grad(..., "
            "create_graph=True) instead, or pass inputs= to backward."
        )
        ctx.report("VL301", call, message)

    def _freed_later(self, call: ast.Call, region: ast.AST, ctx: LintContext) -> bool:
        """A backward pass without retain_graph runs later in the same iteration (``region``: the innermost
        repeating loop, or the function a caller's loop runs)."""
        calls = ctx.facts.calls_inside(region)
        later = False
        for other in calls:
            if other is call:
                later = True
                continue
            if later and _frees(other) and (other.lineno, other.col_offset) > (call.lineno, call.col_offset):
                return True
        return False
