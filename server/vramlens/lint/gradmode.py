"""Where autograd recording is switched off: no_grad, inference_mode, set_grad_enabled(False)."""

from __future__ import annotations

import ast

from .syntax import dotted, last_name

_DISABLING = {"no_grad", "inference_mode"}


def _first_flag(call: ast.Call, keyword: str) -> ast.AST | None:
    if call.args:
        return call.args[0]
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    return None


def _is_false(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def disables_grad(expr: ast.AST) -> bool:
    """``torch.no_grad()``, ``@torch.no_grad``, ``inference_mode()``, ``set_grad_enabled(False)``."""
    target = expr.func if isinstance(expr, ast.Call) else expr
    name = last_name(dotted(target) or "")
    if name in _DISABLING:
        if isinstance(expr, ast.Call) and name == "inference_mode":
            return not _is_false(_first_flag(expr, "mode"))
        return True
    if name == "set_grad_enabled" and isinstance(expr, ast.Call):
        return _is_false(_first_flag(expr, "mode"))
    return False


def enables_grad(expr: ast.AST) -> bool:
    target = expr.func if isinstance(expr, ast.Call) else expr
    name = last_name(dotted(target) or "")
    if name == "enable_grad":
        return True
    if name == "set_grad_enabled" and isinstance(expr, ast.Call):
        flag = _first_flag(expr, "mode")
        return isinstance(flag, ast.Constant) and flag.value is True
    return False


def with_disables_grad(node: ast.With | ast.AsyncWith) -> bool:
    return any(disables_grad(item.context_expr) for item in node.items)


def with_enables_grad(node: ast.With | ast.AsyncWith) -> bool:
    return any(enables_grad(item.context_expr) for item in node.items)


def decorated_without_grad(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(disables_grad(decorator) for decorator in func.decorator_list)


def module_disables_grad(tree: ast.Module) -> bool:
    """A top-level ``torch.set_grad_enabled(False)`` switches recording off for the whole script."""
    return any(
        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and disables_grad(stmt.value)
        for stmt in tree.body
    )
