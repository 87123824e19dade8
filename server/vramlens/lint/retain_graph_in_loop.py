"""retain-graph-in-loop: backward(retain_graph=True) or create_graph=True on every iteration."""

from __future__ import annotations

import ast

from .syntax import is_backward_call, is_small_constant_loop
from .walker import LintContext

_FLAGS = ("retain_graph", "create_graph")


def _flag_set(call: ast.Call) -> str | None:
    for keyword in call.keywords:
        if keyword.arg in _FLAGS and isinstance(keyword.value, ast.Constant) and keyword.value.value is True:
            return keyword.arg
    return None


class RetainGraphInLoop:


    def check_call(self, call: ast.Call, ctx: LintContext) -> None:
        if not ctx.loops or not is_backward_call(call):
            return
        flag = _flag_set(call)
        if flag is None or not any(not is_small_constant_loop(loop) for loop in ctx.loops):
            return
        message = (
            f"{flag}=True inside a loop keeps the saved activations (and, with create_graph, a graph of the "
            "gradients) alive for as long as anything references the graph, so memory can grow every "
            "iteration; sum the losses and call backward once, or drop the flag on the last use."
        )
        ctx.report("VL301", call, message)
