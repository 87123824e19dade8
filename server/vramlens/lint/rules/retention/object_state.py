"""State an object keeps on purpose for one use, told from how its class writes and resets the attribute.

Two shapes are not leaks across calls:

- **per-call state**: an attribute that every call re-initialises before it is used (a decoder's hidden
  state set fresh by ``init_hidden()`` at the start of ``forward``, then updated step by step). It holds one
  call's values; the next call starts from a fresh value.
- **a memo cache with a clearing method**: ``if self.cache is None: self.cache = f(x)`` where another method
  sets ``self.cache = None``. The owner decides when the cached value is dropped.
- **the call's result left in an object its callers hand in and replace**: ``self._context.results[k] = res;
  return res`` where a method such as ``set_context(self, context)`` re-binds ``self._context`` from its
  argument (torchrec's pipelined modules and their per-batch context). The caller receives the same graph
  as the return value, and how long the context lives is the caller's choice, not the class's.

Both are read from syntax alone: a reset is an assignment of a fresh value (None, an empty container, a new
tensor) to ``self.<attr>`` at the top level of a method's body.
"""

from __future__ import annotations

import ast

from ...parse.syntax import call_name, dotted, last_name
from ...walker.context import LintContext

# Calls that make a new object or tensor, never one with autograd history.
_FRESH_CALLS = frozenset({
    "zero_", "zeros", "ones", "empty", "full", "new_zeros", "new_ones", "new_empty", "new_full", "zeros_like",
    "ones_like", "empty_like", "full_like", "fill_", "list", "dict", "set", "deque", "OrderedDict", "defaultdict",
})


def is_fresh(value: ast.AST | None) -> bool:
    """None, a literal, an empty container, ``[None] * n``, a new tensor (``x.data.new(b, d).zero_()``),
    ``Variable(<fresh>)``."""
    if value is None or isinstance(value, ast.Constant):
        return True
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        return all(is_fresh(e) for e in value.elts)
    if isinstance(value, ast.Dict):
        return not value.keys
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):  # ``[None] * n``
        return any(isinstance(side, ast.List) and is_fresh(side) for side in (value.left, value.right))
    if isinstance(value, ast.Call):
        func = value.func
        short = func.attr if isinstance(func, ast.Attribute) else last_name(call_name(value))
        if short in _FRESH_CALLS:
            return True
        if short == "Variable" and value.args:
            return is_fresh(value.args[0])
    return False


def _resets(stmt: ast.stmt, attribute: str) -> bool:
    """``self.<attribute> = <fresh>`` (alone or in a tuple of such)."""
    if not isinstance(stmt, ast.Assign):
        return False
    for target in stmt.targets:
        if dotted(target) == attribute:
            return is_fresh(stmt.value)
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(stmt.value, (ast.Tuple, ast.List)):
            for element, value in zip(target.elts, stmt.value.elts):
                if dotted(element) == attribute:
                    return is_fresh(value)
    return False


def _methods(cls: ast.ClassDef) -> list[ast.AST]:
    return [s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _resetting_methods(cls: ast.ClassDef, attribute: str, ctx: LintContext) -> set[str]:
    """Methods of the class (but ``__init__``) whose body resets ``attribute`` at its top level."""
    key = ("resetters", id(cls), attribute)
    found = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = {
            m.name for m in _methods(cls) if m.name != "__init__" and any(_resets(s, attribute) for s in m.body)
        }
    return found


def _self_call(stmt: ast.stmt) -> str | None:
    """``self.m(...)`` as a statement or as the value of an assignment: ``m``."""
    value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and dotted(value.func.value) == "self":
        return value.func.attr
    return None


def _resets_before(func: ast.AST, attribute: str, line: int, resetters: set[str]) -> bool:
    """A top-level statement of ``func`` before ``line`` resets the attribute, itself or by a resetting method."""
    for stmt in func.body:
        if stmt.lineno >= line:
            return False
        if _resets(stmt, attribute) or _self_call(stmt) in resetters:
            return True
    return False


def reinitialised_per_call(attribute: str, ctx: LintContext, line: int) -> bool:
    """``self.<attr>`` is re-initialised on every call before ``line`` is reached: by the current function
    (directly or through a method of its class), or, when the function is a helper of its class, by every
    method of the class that calls it, before the call; and no training loop runs between the reset and the
    store (``self.log = []`` then a loop of optimisation steps appending to it keeps every step's graph)."""
    cls = ctx.scope.cls
    func = ctx.scope.node
    if cls is None or isinstance(func, ast.Module) or not attribute.startswith("self.") or attribute.count(".") != 1:
        return False
    resetters = _resetting_methods(cls, attribute, ctx)
    if not resetters and not any(_resets(s, attribute) for s in func.body):
        return False
    graph = ctx.graph
    if any(graph.trains_node(loop, func) for loop in ctx.loops):
        return False  # a training loop between the reset and the store: it keeps every step's graph
    if _resets_before(func, attribute, line, resetters - {func.name}):
        return True
    if func.name in {"forward", "__call__"}:
        return False  # called from outside the class, by whoever owns the object
    sites = graph.callers_of(func)
    return bool(sites) and all(
        ctx.facts.class_of(site.caller) is cls and site.caller is not func
        and not any(graph.trains_node(loop, site.caller) for loop in site.loops)
        and _resets_before(site.caller, attribute, site.call.lineno, resetters - {getattr(site.caller, "name", "")})
        for site in sites
    )


def memo_cache_with_clear(attribute: str, ctx: LintContext) -> bool:
    """The store runs only when the cached value is missing (``if self.x is None:``) and another method of
    the class clears it (``self.x = None``): a cache whose lifetime its owner manages."""
    cls = ctx.scope.cls
    if cls is None or not attribute.startswith("self."):
        return False
    line = ctx.line
    guarded = any(
        isinstance(block, ast.If) and _tests_missing(block.test, attribute)
        and any(s.lineno <= line <= (s.end_lineno or s.lineno) for s in block.body)  # not its ``else``
        for block in ctx.blocks
    )
    if not guarded:
        return False
    return any(
        m is not ctx.scope.node and m.name != "__init__"
        and any(isinstance(s, ast.Assign) and _resets(s, attribute) and _is_none(s.value) for s in ast.walk(m))
        for m in _methods(cls)
    )


def result_left_in_a_handed_in_object(container: str, values: list[ast.AST], ctx: LintContext) -> bool:
    """``self.<holder>.<...>`` gets only names the function returns as they are (``return res``), and a method
    of the class other than ``__init__`` re-binds ``self.<holder>`` from one of its arguments: an object the
    callers hand in and swap (a per-batch context), holding what they receive anyway."""
    cls = ctx.scope.cls
    func = ctx.scope.node
    if cls is None or isinstance(func, ast.Module) or not container.startswith("self.") or container.count(".") < 2:
        return False
    if not values or not all(isinstance(v, ast.Name) for v in values):
        return False
    holder = ".".join(container.split(".", 2)[:2])
    if not _rebound_from_an_argument(cls, holder, ctx):
        return False
    returned = _returned_as_they_are(func)
    return all(v.id in returned for v in values)


def _rebound_from_an_argument(cls: ast.ClassDef, attribute: str, ctx: LintContext) -> bool:
    """A method (but ``__init__``) whose body has ``self.<attr> = <one of its parameters>`` at its top level."""
    key = ("rebound-from-argument", id(cls), attribute)
    found = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = any(
            isinstance(s, ast.Assign) and isinstance(s.value, ast.Name) and s.value.id in _parameters(m)
            and any(dotted(t) == attribute for t in s.targets)
            for m in _methods(cls) if m.name != "__init__" for s in m.body
        )
    return found


def _parameters(func: ast.AST) -> set[str]:
    args = func.args
    return {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} - {"self", "cls"}


def _returned_as_they_are(func: ast.AST) -> set[str]:
    """Names returned whole (``return res``, or an element of ``return a, b``), not only used in the result."""
    found: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and node.value is not None:
            parts = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            found |= {p.id for p in parts if isinstance(p, ast.Name)}
    return found


def _is_none(value: ast.AST) -> bool:
    return isinstance(value, ast.Constant) and value.value is None


def _tests_missing(test: ast.AST, attribute: str) -> bool:
    """``self.x is None``, ``not self.x`` (also as one operand of ``or``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(_tests_missing(v, attribute) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return dotted(test.operand) == attribute
    return (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
        and dotted(test.left) == attribute and _is_none(test.comparators[0])
    )
