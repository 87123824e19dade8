"""Where autograd recording is switched off: no_grad, inference_mode, set_grad_enabled(False), and the
decorators, context managers and aliases a file defines around them.

A grad mode is one of ``OFF``, ``ON`` or ``MAYBE`` (``set_grad_enabled(is_train)``, ``no_grad() if x else
nullcontext()``): the code chose the mode at run time, so a check that would complain about recording stays
quiet, while a check about graphs kept alive still assumes recording may be on.
"""

from __future__ import annotations

import ast

from ..parse.syntax import dotted, iter_nodes, last_name

OFF, ON, MAYBE = "off", "on", "maybe"

_DISABLING = {"no_grad", "inference_mode"}
_CONTEXT_MANAGER_DECORATORS = {"contextmanager", "asynccontextmanager"}


def _first_flag(call: ast.Call, keyword: str) -> ast.AST | None:
    if call.args:
        return call.args[0]
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    return None


def _constant_flag(node: ast.AST | None) -> bool | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, bool) else None


def builtin_mode(expr: ast.AST) -> str | None:
    """The grad mode torch's own context managers and decorators set; None when ``expr`` is not one."""
    target = expr.func if isinstance(expr, ast.Call) else expr
    name = last_name(dotted(target) or "")
    if name in _DISABLING:
        if isinstance(expr, ast.Call) and name == "inference_mode" and (expr.args or expr.keywords):
            flag = _constant_flag(_first_flag(expr, "mode"))
            return MAYBE if flag is None else (OFF if flag else None)
        return OFF
    if name in {"set_grad_enabled", "_set_grad_enabled"} and isinstance(expr, ast.Call):
        flag = _constant_flag(_first_flag(expr, "mode"))
        return MAYBE if flag is None else (ON if flag else OFF)
    if name == "enable_grad":
        return ON
    lowered = name.lower()
    if "no_grad" in lowered or "inference_mode" in lowered:
        return OFF  # a project's own wrapper, named for what it does (``smart_inference_mode``)
    return None


def disables_grad(expr: ast.AST) -> bool:
    """``torch.no_grad()``, ``@torch.no_grad``, ``inference_mode()``, ``set_grad_enabled(False)``."""
    return builtin_mode(expr) == OFF


class GradModes:
    """Grad modes of context managers and decorators, including those this file defines itself."""

    def __init__(self, functions: dict, classes: dict, module_stmts: list[ast.stmt], calls_of=None) -> None:
        """``calls_of(definition)``: every call written inside it, nested definitions included (a cheap
        first test); without it each definition is searched whole."""
        self.disablers: set[str] = set()
        for stmt in module_stmts:  # ``no_grad = torch.no_grad()``; ``inference = torch.inference_mode``
            if isinstance(stmt, ast.Assign) and builtin_mode(stmt.value) == OFF:
                self.disablers.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        mentions = (lambda node: any(_callee_name(c) in _GRAD_MODE_NAMES for c in calls_of(node))) if calls_of else _mentions_grad_mode
        for name, func in functions.items():
            if mentions(func) and _wraps_without_grad(func):
                self.disablers.add(name)
        for name, cls in classes.items():
            if mentions(cls) and _enters_without_grad(cls):
                self.disablers.add(name)

    def mode(self, expr: ast.AST | None) -> str | None:
        if expr is None:
            return None
        if isinstance(expr, ast.IfExp):
            modes = {self.mode(expr.body), self.mode(expr.orelse)}
            return modes.pop() if len(modes) == 1 else MAYBE
        target = expr.func if isinstance(expr, ast.Call) else expr
        name = dotted(target) or ""
        if name and (name in self.disablers or last_name(name) in self.disablers):
            return OFF
        return builtin_mode(expr)

    def with_mode(self, node: ast.With | ast.AsyncWith) -> str | None:
        """The mode a ``with`` statement sets for its body (the last item that sets one wins)."""
        found = None
        for item in node.items:
            mode = self.mode(item.context_expr)
            if mode is not None:
                found = mode
        return found

    def decorator_mode(self, func: ast.AST) -> str | None:
        found = None
        for decorator in func.decorator_list:
            mode = self.mode(decorator)
            if mode is not None:
                found = mode
        return found

    def statement_mode(self, stmt: ast.stmt) -> str | None:
        """A statement that switches the mode for the rest of its block: ``torch.set_grad_enabled(False)``,
        ``stack.enter_context(torch.no_grad())``."""
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            return None
        call = stmt.value
        if isinstance(call.func, ast.Attribute) and call.func.attr == "enter_context" and call.args:
            return self.mode(call.args[0])
        if isinstance(call.func, ast.Attribute) and call.func.attr == "__enter__":
            return self.mode(call.func.value)
        target = last_name(dotted(call.func) or "")
        if target in {"set_grad_enabled", "_set_grad_enabled"}:
            return builtin_mode(call)
        return None


_GRAD_MODE_NAMES = frozenset({"no_grad", "inference_mode", "set_grad_enabled", "_set_grad_enabled"})


def _callee_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else (func.id if isinstance(func, ast.Name) else "")


def _mentions_grad_mode(node: ast.AST) -> bool:
    """Cheap test before a full look: does the definition name a grad-mode switch at all?"""
    for child in ast.walk(node):
        if isinstance(child, ast.Attribute) and child.attr in _GRAD_MODE_NAMES:
            return True
        if isinstance(child, ast.Name) and child.id in _GRAD_MODE_NAMES:
            return True
    return False


def _wraps_without_grad(func: ast.AST) -> bool:
    """A decorator or context-manager factory of this file that runs its target with recording off:
    ``with torch.no_grad(): return fn(*a)`` in a wrapper, ``return torch.no_grad()(fn)``, or a
    ``@contextmanager`` that yields inside ``with torch.no_grad():``."""
    is_context_manager = any(last_name(dotted(d) or "") in _CONTEXT_MANAGER_DECORATORS for d in func.decorator_list)
    parameters = {a.arg for node in iter_nodes(func) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                  for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
    for node in iter_nodes(func):
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(builtin_mode(i.context_expr) == OFF for i in node.items):
            for inner in iter_nodes(node):
                if is_context_manager and isinstance(inner, (ast.Yield, ast.YieldFrom)):
                    return True
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id in parameters:
                    return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and builtin_mode(node.func) == OFF:
            return any(isinstance(arg, ast.Name) and arg.id in parameters for arg in node.args)
    return False


def _enters_without_grad(cls: ast.ClassDef) -> bool:
    """A context-manager class whose ``__enter__`` switches recording off."""
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__enter__":
            for node in iter_nodes(item):
                if isinstance(node, ast.Call):
                    target = last_name(dotted(node.func) or "")
                    if target in {"set_grad_enabled", "_set_grad_enabled"} and builtin_mode(node) == OFF:
                        return True
                    if target == "__enter__" and isinstance(node.func, ast.Attribute):
                        inner = node.func.value
                        if builtin_mode(inner) == OFF:
                            return True
    return False
