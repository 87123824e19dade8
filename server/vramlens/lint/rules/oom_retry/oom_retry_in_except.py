"""oom-retry-in-except: retrying the forward pass inside the except block of an out-of-memory error.

While the handler runs, the exception's traceback references every frame of the failed
attempt and so every tensor those frames hold: the retry starts with that memory still taken.
"""

from __future__ import annotations

import ast

from ...facts.forwards import FORWARD
from ...findings import Code
from ...parse.syntax import call_name, dotted, iter_nodes, last_name
from ...walker.rule import Rule
from ...walker.context import LintContext

RULE = "oom-retry-in-except"
CODES = (
    Code(
        "VL601", RULE, "warning",
        "a retry runs inside an out-of-memory except block",
        finds=(
            "a retry or forward pass inside `except torch.OutOfMemoryError` (or `RuntimeError` / `Exception` "
            "handlers that test for \"out of memory\")"
        ),
        fix="— (set a flag, retry after the `except` block)",
        why=(
            "While the handler runs, the exception's traceback references every frame of the failed attempt and so "
            "every tensor those frames hold: the retry starts with that memory still allocated."
        ),
        example=(
            "try:\n"
            "    out = model(batch)\n"
            "except torch.OutOfMemoryError:\n"
            "    out = model(batch[: len(batch) // 2])"
        ),
    ),
)


_GENERIC = {"RuntimeError", "Exception", "BaseException"}
_NOT_RETRIES = {"append", "extend", "insert", "add", "update", "pop", "clear", "item", "cpu", "detach", "empty_cache", "collect", "print", "warn", "warning", "info", "debug", "error", "exception", "sleep", "format", "str", "synchronize", "zero_grad", "reset_peak_memory_stats"}


def _caught(handler: ast.ExceptHandler) -> set[str]:
    if handler.type is None:
        return {"BaseException"}
    nodes = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return {last_name(dotted(node) or "") for node in nodes}


def _mentions_oom(handler: ast.ExceptHandler) -> bool:
    return any(
        isinstance(node, ast.Constant) and isinstance(node.value, str) and "out of memory" in node.value.lower()
        for node in iter_nodes(handler)
    )


def catches_oom(handler: ast.ExceptHandler) -> bool:
    caught = _caught(handler)
    return "OutOfMemoryError" in caught or (bool(caught & _GENERIC) and _mentions_oom(handler))


def _catches_oom_memo(handler: ast.ExceptHandler, ctx: LintContext) -> bool:
    key = ("catches-oom", id(handler))
    known = ctx.memo.get(key)
    if known is None:
        known = ctx.memo[key] = catches_oom(handler)
    return known


class OomRetryInExcept(Rule):
    codes = CODES

    def check_call(self, call: ast.Call, ctx: LintContext) -> None:
        if not ctx.handler_depth:
            return  # not inside an except block of this scope
        handler_index = next((i for i in range(len(ctx.blocks) - 1, -1, -1) if isinstance(ctx.blocks[i], ast.ExceptHandler)), None)
        if handler_index is None or handler_index == 0:
            return
        handler, attempt = ctx.blocks[handler_index], ctx.blocks[handler_index - 1]
        if not isinstance(attempt, ast.Try) or not _catches_oom_memo(handler, ctx) or ctx.memo.get(("oom", id(handler))):
            return
        if not self._is_retry(call, attempt, ctx):
            return
        ctx.memo[("oom", id(handler))] = True
        message = (
            "this retry runs inside the out-of-memory except block, where the exception's traceback still holds "
            "every tensor of the failed attempt, so it starts with that memory still allocated; set a flag here "
            "and retry after the except block."
        )
        ctx.report("VL601", call, message)

    def _is_retry(self, call: ast.Call, attempt: ast.Try, ctx: LintContext) -> bool:
        name = call_name(call)
        short = last_name(name) if name else ""
        if short in _NOT_RETRIES:
            return False
        if ctx.forward_kind(call) == FORWARD or short == ctx.scope.name:
            return True
        site = ctx.graph.site_of.get(id(call))
        if site is not None and ctx.graph.runs_forward.get(id(site.callee)):
            return True
        attempted = {call_name(c) for stmt in attempt.body for c in ctx.facts.calls_inside(stmt)}
        return bool(name) and name in attempted  # the same operation, attempted again
