"""Outputs of a framework's per-batch hook kept on ``self`` across batches (library.PER_BATCH_HOOKS).

``self.val_outputs.append(logits)`` in a LightningModule's ``validation_step`` runs without autograd, so no
graph is kept, but every batch's logits stay on the GPU until the list is cleared: a whole epoch of outputs.
Reported (VL102) when the list is known to be a list kept on ``self``, the value is a forward pass's output
(followed through the hook's assignments) still on the device (not ``.cpu()``, ``.item()``, ``.tolist()``), and
the hook itself does not empty the list. Hooks that run with autograd on are the retained-graph rule's: the
kept value carries its graph, and that rule says so.
"""

from __future__ import annotations

import ast

from ...facts.containers import is_known_list, list_method_call
from ...facts.forwards import FORWARD
from ...facts.library import PER_BATCH_HOOKS, PerBatchHooks
from ...facts.project import base_names
from ...facts.tensor_types import TensorTypes
from ...parse.syntax import dotted, last_name

_OFF_DEVICE = frozenset({"cpu", "item", "tolist", "numpy"})


def hook_of(ctx) -> PerBatchHooks | None:
    """The table's entry for the function being walked, when it is a framework's per-batch hook."""
    cls = ctx.scope.cls
    name = getattr(ctx.scope.node, "name", None)
    if cls is None or name is None:
        return None
    bases = {last_name(name) for name in base_names(cls, ctx.facts)}  # through the project's classes too
    return next((h for h in PER_BATCH_HOOKS if name in h.hooks and bases & h.bases), None)


def check_kept_output(stmt: ast.Expr, call: ast.Call, ctx) -> None:
    hook = hook_of(ctx)
    if hook is None or hook.grad or not list_method_call(call) or call.func.attr not in {"append", "extend"}:
        return
    container = dotted(call.func.value)
    if not container or not container.startswith("self.") or container.count(".") != 1:
        return
    if not is_known_list(call.func.value, ctx.scope.node, ctx.scope.cls, ctx.facts):
        return
    if _emptied_in(container, ctx.scope.node):
        return
    value = call.args[0]
    if not _device_output(value, ctx, TensorTypes(ctx.facts, ctx.evidence, ctx.scope.node, ctx.scope.cls)):
        return
    text = ctx.positions.segment(value)
    message = (
        f"`{container}` keeps `{text}` from every batch of {hook.framework}'s `{ctx.scope.name}` on the device "
        f"(no graph: the framework runs it without autograd), so a whole epoch of outputs stays in GPU memory; "
        f"{hook.remedy}."
    )
    ctx.report("VL102", stmt, message)


def _emptied_in(container: str, func: ast.AST) -> bool:
    """The hook clears or rebinds the list itself: it holds one batch's values."""
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "clear" \
                and dotted(node.func.value) == container:
            return True
        if isinstance(node, ast.Assign) and any(dotted(t) == container for t in node.targets):
            return True
    return False


def _device_output(value: ast.AST, ctx, types: TensorTypes, depth: int = 0) -> bool:
    """A forward pass's output (or a proven tensor made from one) that was not moved off the device."""
    if depth > 6:
        return False
    for node in ast.walk(value):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _OFF_DEVICE:
            return False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            return False  # ``.to(...)``: perhaps the CPU
    if isinstance(value, ast.Call) and ctx.forward_kind(value) == FORWARD:
        return True
    if isinstance(value, ast.Subscript):
        return _device_output(value.value, ctx, types, depth + 1)
    if isinstance(value, ast.Name):
        values = types._values_of(value.id)
        return bool(values) and all(v is not None and _device_output(v, ctx, types, depth + 1) for v in values)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and types.is_tensor(value):
        return _device_output(value.func.value, ctx, types, depth + 1)
    return False
