"""missing-no-grad: inference code that records an autograd graph nobody will use.

With recording on, every intermediate activation of the forward pass is kept for a
backward pass; under no_grad/inference_mode they are freed as soon as they are consumed.
"""

from __future__ import annotations

import ast
import os
import re

from .edits import insert_line_above, wrap_in_with
from .findings import Edit, Fix
from .gradmode import with_disables_grad, with_enables_grad
from .syntax import INFERENCE_WORDS, is_private_decoding_helper, iter_nodes, iterates_eval_data, method_name, name_words, receiver_name
from .walker import LintContext, Scope

_MODULE_INFERENCE_WORDS = {"generate"}  # other module methods (encode, predict_*, sample) often serve forward()
_INFERENCE_WRAPPER = re.compile(r"predictor|infer|pipeline|evaluat|sampler|service|handler|engine|runner", re.IGNORECASE)
_LOOKED_AT = frozenset({ast.For, ast.AsyncFor, ast.Expr})  # loops over eval data, ``model.eval()``
_GRADIENT_WORK = {"requires_grad_", "enable_grad", "grad", "backward", "vjp", "jvp", "hessian", "jacobian"}


def graph_building_call(stmts: list[ast.stmt], ctx: LintContext, grad_off: bool = False) -> ast.Call | None:
    """The first call, in program order, that runs a model while recording is on."""
    for stmt in stmts:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            inner = grad_off
            if with_disables_grad(stmt):
                inner = True
            elif with_enables_grad(stmt):
                inner = False
            found = graph_building_call(stmt.body, ctx, inner)
            if found is not None:
                return found
            continue
        if not grad_off:
            for call in ctx.facts.calls_of(stmt):
                if ctx.evaluator.is_forward_call(call):
                    return call
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            nested = getattr(stmt, field, None)
            if nested:
                bodies = [h.body for h in nested] if field in ("handlers", "cases") else [nested]
                for body in bodies:
                    found = graph_building_call(body, ctx, grad_off)
                    if found is not None:
                        return found
    return None


def _does_gradient_work(node: ast.AST, ctx: LintContext) -> bool:
    return ctx.facts.trains(node) or any(method_name(call) in _GRADIENT_WORK for call in ctx.facts.calls_inside(node))


class MissingNoGrad:
    def check_scope(self, ctx: LintContext) -> None:
        scope = ctx.scope
        if not isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)) or ctx.state.grad_off:
            return
        if not self._is_inference_function(scope, ctx):
            return
        call = graph_building_call(scope.node.body, ctx)
        if call is None or _does_gradient_work(scope.node, ctx) or self._called_by_training(scope, ctx):
            return
        ctx.memo[("inference", id(scope.node))] = True
        message = (
            f"`{scope.name}` runs the model with autograd recording on, so every intermediate activation is "
            "kept for a backward pass that never comes; run it under torch.no_grad()."
        )
        ctx.report("VL201", call, message, self._decorator_fix(scope.node, ctx))


    def check_statement(self, stmt: ast.stmt, ctx: LintContext) -> None:
        if type(stmt) not in _LOOKED_AT or ctx.state.grad_off or ctx.memo.get(("inference", id(ctx.scope.node))):
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor)) and iterates_eval_data(stmt):
            self._eval_loop(stmt, ctx)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            if method_name(stmt.value) == "eval" and not stmt.value.args and receiver_name(stmt.value):
                self._after_eval(stmt, ctx)

    # -- what counts as inference -----------------------------------------------------------
    def _is_inference_function(self, scope: Scope, ctx: LintContext) -> bool:
        name, cls = scope.name, scope.cls
        if name == "__call__":
            return cls is not None and bool(_INFERENCE_WRAPPER.search(cls.name)) and cls.name not in ctx.facts.module_classes
        if not (set(name_words(name)) & INFERENCE_WORDS) or is_private_decoding_helper(name):
            return False
        if name.startswith("test_") and os.path.basename(ctx.path).startswith(("test_", "conftest")):
            return False  # a unit test, not an evaluation routine
        if cls is not None and cls.name in ctx.facts.module_classes:
            # Lightning runs *_step hooks under no_grad itself; encode/decode/test helpers are parts of forward().
            if name.endswith("_step") or not (set(name_words(name)) & _MODULE_INFERENCE_WORDS):
                return False
            return not _called_on_self(cls, name)
        return True

    def _called_by_training(self, scope: Scope, ctx: LintContext) -> bool:
        """A function whose result a training step backpropagates must keep recording."""
        callers = ctx.memo.get("training-callees")
        if callers is None:
            callers = set()
            scopes = [ctx.tree, *ctx.facts.functions.values(), *ctx.facts.methods.values()]
            for node in scopes:
                if ctx.facts.trains(node):
                    callers.update(method_name(c) for c in ctx.facts.calls_inside(node))
            ctx.memo["training-callees"] = callers
        return scope.name in callers

    # -- loops over validation data and code after model.eval() ------------------------------
    def _eval_loop(self, loop: ast.For, ctx: LintContext) -> None:
        call = graph_building_call(loop.body, ctx)
        if call is None or _does_gradient_work(loop, ctx):
            return
        ctx.memo[("eval-loop", id(loop))] = True
        message = (
            f"this loop over `{ctx.positions.segment(loop.iter)}` runs the model with autograd recording on, "
            "so each batch keeps its activations for a backward pass that never comes; wrap it in torch.no_grad()."
        )
        ctx.report("VL201", call, message, self._region_fix(loop, ctx))

    def _after_eval(self, stmt: ast.Expr, ctx: LintContext) -> None:
        following = _following(stmt, ctx)
        region: list[ast.stmt] = []
        for later in following:
            if any(method_name(c) == "train" for c in ctx.facts.calls_inside(later)):
                break
            region.append(later)
        if any(_does_gradient_work(s, ctx) for s in region):
            return
        for later in region:
            if isinstance(later, (ast.For, ast.AsyncFor)) and iterates_eval_data(later):
                return  # reported as an evaluation loop
            call = graph_building_call([later], ctx)
            if call is not None:
                message = (
                    f"after `{ctx.positions.segment(stmt.value)}` this forward pass still records autograd "
                    "history, keeping every activation alive for a backward pass that never comes; "
                    "run it under torch.no_grad()."
                )
                ctx.report("VL201", call, message, self._region_fix(later, ctx))
                return

    # -- fixes ---------------------------------------------------------------------------------
    def _region_fix(self, stmt: ast.stmt, ctx: LintContext) -> tuple[Fix, ...]:
        scope = ctx.scope
        if isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not _does_gradient_work(scope.node, ctx) and not self._called_by_training(scope, ctx):
                return self._decorator_fix(scope.node, ctx)
        prefix, extra = _no_grad_name(ctx)
        edit = wrap_in_with(ctx.positions, stmt, f"{prefix}()")
        if edit is None:
            return ()
        return (Fix(f"Wrap in `with {prefix}():`", (*extra, edit)),)

    def _decorator_fix(self, func: ast.AST, ctx: LintContext) -> tuple[Fix, ...]:
        prefix, extra = _no_grad_name(ctx)
        first_line = min([d.lineno for d in func.decorator_list] + [func.lineno])
        edit = insert_line_above(ctx.positions, first_line, f"@{prefix}()")
        return (Fix(f"Decorate `{func.name}` with @{prefix}()", (*extra, edit)),)


def _no_grad_name(ctx: LintContext) -> tuple[str, tuple[Edit, ...]]:
    """How to spell torch.no_grad in this file, adding ``import torch`` when nothing fits."""
    facts = ctx.facts
    if facts.torch_alias:
        return f"{facts.torch_alias}.no_grad", ()
    for local, qualified in facts.imported_names.items():
        if qualified == "torch.no_grad":
            return local, ()
    line = facts.future_import_end + 1
    return "torch.no_grad", (Edit(line, 0, line, 0, "import torch\n"),)


def _called_on_self(cls: ast.ClassDef, name: str) -> bool:
    return any(
        isinstance(node, ast.Call) and receiver_name(node) == "self" and method_name(node) == name
        for node in iter_nodes(cls)
    )


def _following(stmt: ast.stmt, ctx: LintContext) -> list[ast.stmt]:
    owner = ctx.blocks[-1] if ctx.blocks else ctx.scope.node
    for field in ("body", "orelse", "finalbody"):
        stmts = getattr(owner, field, None) or []
        for index, candidate in enumerate(stmts):
            if candidate is stmt:
                return stmts[index + 1 :]
    return []
