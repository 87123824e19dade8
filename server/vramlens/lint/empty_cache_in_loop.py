"""empty-cache-in-loop: torch.cuda.empty_cache() or gc.collect() on every iteration of a hot loop.

Emptying the cache does not lower peak memory — the next iteration allocates the same blocks again — but
every call synchronises and returns memory to the driver, slowing each step. It only matters in a loop
that runs many times: one that trains, or that runs a model over batches of data. Loops over a handful
of items (trackers, checkpoint shards, models to compare), retry loops that end on the first success
(a batch-size search after an out-of-memory error) and calls guarded by an ``if`` or an ``except`` are
left alone.
"""

from __future__ import annotations

import ast

from .syntax import call_name, method_name
from .walker import LintContext

_TARGETS = {"torch.cuda.empty_cache", "cuda.empty_cache", "gc.collect"}
_METHODS = {name.rsplit(".", 1)[1] for name in _TARGETS}


def _is_availability_check(test: ast.AST) -> bool:
    return "is_available" in ast.unparse(test)


def _runs_every_iteration(ctx: LintContext) -> bool:
    """No step modulus, threshold or except clause between the innermost loop and the call."""
    innermost = ctx.loops[-1]
    inside = ctx.blocks[ctx.blocks.index(innermost) + 1 :] if innermost in ctx.blocks else []
    for block in inside:
        if isinstance(block, ast.ExceptHandler):
            return False
        if isinstance(block, (ast.If, ast.Match)) and not (isinstance(block, ast.If) and _is_availability_check(block.test)):
            return False
    return True


def is_hot_loop(loop: ast.AST, ctx: LintContext) -> bool:
    return ctx.graph.is_hot_loop(loop, ctx.scope.node)


class EmptyCacheInLoop:
    def check_call(self, call: ast.Call, ctx: LintContext) -> None:
        if not ctx.loops or method_name(call) not in _METHODS:
            return
        name = call_name(call)
        if ctx.facts.torch_alias and name.startswith(f"{ctx.facts.torch_alias}."):
            name = "torch." + name.split(".", 1)[1]
        if name not in _TARGETS or not _runs_every_iteration(ctx) or not is_hot_loop(ctx.loops[-1], ctx):
            return
        what = "gc.collect()" if name == "gc.collect" else "empty_cache()"
        message = (
            f"{what} on every iteration does not lower peak memory — the next iteration re-allocates the "
            "same blocks — but slows every step; call it rarely (e.g. every N steps) or not at all."
        )
        ctx.report("VL401", call, message)
