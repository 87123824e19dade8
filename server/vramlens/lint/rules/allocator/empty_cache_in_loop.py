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

from ...findings import Code
from ...parse.syntax import call_name, method_name
from ...walker.rule import Rule
from ...walker.context import LintContext

RULE = "empty-cache-in-loop"
CODES = (
    Code(
        "VL401", RULE, "info",
        "torch.cuda.empty_cache() or gc.collect() on every iteration",
        finds=(
            "`torch.cuda.empty_cache()` or `gc.collect()` on every iteration of a hot loop: a training or data "
            "loop with model work of its own — not a loop over a few items, checkpoint shards or trackers, not a "
            "retry loop that ends on the first success, not an epoch loop whose steps run in a loop or function of "
            "their own; a call guarded by an `if` or inside an `except` is fine"
        ),
        fix="—",
        why=(
            "Emptying the cache does not lower peak memory — the next iteration allocates the same blocks again — "
            "but every call synchronises with the GPU and returns memory to the driver, slowing each step."
        ),
        example=(
            "for x, y in loader:\n"
            "    criterion(model(x), y).backward()\n"
            "    optimizer.step()\n"
            "    torch.cuda.empty_cache()"
        ),
    ),
)


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


class EmptyCacheInLoop(Rule):
    codes = CODES

    def check_call(self, call: ast.Call, ctx: LintContext) -> None:
        if not ctx.loops or method_name(call) not in _METHODS:
            return
        name = call_name(call)
        if ctx.facts.torch_alias and name.startswith(f"{ctx.facts.torch_alias}."):
            name = "torch." + name.split(".", 1)[1]
        if name not in _TARGETS or not _runs_every_iteration(ctx) or not ctx.is_hot_loop(ctx.loops[-1]):
            return
        what = "gc.collect()" if name == "gc.collect" else "empty_cache()"
        message = (
            f"{what} on every iteration does not lower peak memory — the next iteration re-allocates the "
            "same blocks — but slows every step; call it rarely (e.g. every N steps) or not at all."
        )
        ctx.report("VL401", call, message)
