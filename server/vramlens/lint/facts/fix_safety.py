"""When a detaching fix cannot break the code it rewrites.

``.detach()`` is offered on a value only when

- the value is proven to be a tensor (tensor_types.py): on an ``int``, a ``dict``, a tuple, ``None`` or a
  conditional that may be a number, the method does not exist and the fix raises at the first step;
- the place it is stored in (the container, the accumulator, the attribute) is never read where a graph is
  needed: in a backward (``.backward()``, ``autograd.grad``, ``manual_backward``, ``scaler.scale``), for a
  ``.grad`` or a hook, or in what a function returns (a loss summed into the returned value). Reads are
  followed through assignments and loops in the same function, and, for an attribute of ``self``, through
  every method of the class. A GAN's stored fake images, fed to the discriminator in another method whose
  loss is backpropagated, keep their graph.

``.item()`` is offered second, and only on a proven 0-d tensor (a full reduction, a torch loss).
"""

from __future__ import annotations

import ast

from ..parse.syntax import call_name, dotted, last_name

_BACKWARD_NAMES = frozenset({"backward", "manual_backward", "grad", "scale", "register_hook", "retain_grad"})
_ROUNDS = 4
_FILLERS = frozenset({"append", "extend", "insert", "add", "update", "appendleft", "setdefault", "put"})


def needs_graph_later(place: str | None, scope: ast.AST, cls: ast.ClassDef | None) -> bool:
    """Whether what is stored in ``place`` is read where its graph is needed (see the module's docstring).
    An unknown place (None) is judged by the value alone."""
    if not place:
        return False
    functions: list[ast.AST] = [scope]
    if place.startswith(("self.", "cls.")) and cls is not None:
        functions += [f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f is not scope]
    elif isinstance(scope, ast.Module):
        functions = [scope]
    return any(_graph_read_in(place, function) for function in functions)


def backpropagated_here(value: ast.AST, scope: ast.AST, carries_graph) -> bool:
    """The graph of ``value`` is freed by a backward of the function that always runs when it is stored:
    ``loss.backward()`` (or ``accelerator.backward(loss)``) on ``value`` or on something computed from it,
    without ``retain_graph``, outside any branch the store is not in. A later backward through a copy kept
    elsewhere would raise, so working code never does one, and keeping the copy detached changes nothing.
    ``carries_graph(name_node)``: the walker's verdict on a name at the store."""
    # The graph-carrying names the value is made of (not a module it calls, not an input it was given).
    callees = {id(n.func) for n in ast.walk(value) if isinstance(n, ast.Call)}
    sources = {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and id(n) not in callees and carries_graph(n)}
    if not sources:
        return False
    branches = _branches_of(scope)
    calls = [n for n in ast.walk(scope) if isinstance(n, ast.Call) and last_name(call_name(n)) in {"backward", "manual_backward"}]
    if any(k.arg in {"retain_graph", "create_graph"} for c in calls for k in c.keywords):
        return False  # a graph kept for another backward: nothing is proven freed
    derived = _derived(sources, scope)
    store_branches = branches.get(id(value), frozenset())
    for call in calls:
        receiver = call.func.value if isinstance(call.func, ast.Attribute) and not call.args else None
        target = receiver if receiver is not None else (call.args[0] if len(call.args) == 1 else None)
        if target is None or not _mentions(target, derived):
            continue
        if branches.get(id(call), frozenset()) <= store_branches:
            return True
    return False


def _branches_of(scope: ast.AST) -> dict[int, frozenset[int]]:
    """id(node) -> the ids of the conditional statements (if, try, while) it lies in, within ``scope``."""
    found: dict[int, frozenset[int]] = {}
    todo = [(scope, frozenset())]
    while todo:
        node, inside = todo.pop()
        found[id(node)] = inside
        here = inside | {id(node)} if isinstance(node, (ast.If, ast.Try, ast.While, ast.IfExp, ast.Match)) else inside
        todo.extend((child, here) for child in ast.iter_child_nodes(node))
    return found


def graph_read_in(place: str, function: ast.AST) -> bool:
    """Whether ``function`` (or the module) reads ``place``, or what is made from it, where a graph is needed."""
    return _graph_read_in(place, function)


def derived_names(names: set[str], function: ast.AST) -> set[str]:
    """``names`` and every name ``function`` binds from something that mentions one of them."""
    return _derived(names, function)


def mentions(expr: ast.AST, names: set[str]) -> bool:
    """Whether ``expr`` reads one of ``names`` (or an attribute of one)."""
    return _mentions(expr, names)


def _graph_read_in(place: str, function: ast.AST) -> bool:
    derived = _derived({place}, function)
    for node in ast.walk(function):
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) and node.value is not None and _mentions(node.value, derived):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "grad" and _mentions(node.value, derived):
            return True
        if isinstance(node, ast.Call) and _method_name(node) in _BACKWARD_NAMES:
            parts = [*node.args, *(k.value for k in node.keywords)]
            if isinstance(node.func, ast.Attribute):
                parts.append(node.func.value)
            if any(_mentions(part, derived) for part in parts):
                return True
    return False


def _method_name(call: ast.Call) -> str:
    """The called name, also on a chain no dotted name spells: ``backward`` of ``sum(losses).backward()``."""
    return call.func.attr if isinstance(call.func, ast.Attribute) else last_name(call_name(call))


def _derived(names: set[str], function: ast.AST) -> set[str]:
    """``names`` and every name bound in ``function`` from something that mentions one of them."""
    derived = set(names)
    statements = [n for n in ast.walk(function) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.withitem))
                  or (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _FILLERS)]
    for _ in range(_ROUNDS):
        grown = False
        for node in statements:
            value, targets = _flow(node)
            if value is None or not _mentions(value, derived):
                continue
            for target in targets:
                for sub in ast.walk(target):
                    name = dotted(sub) if isinstance(sub, (ast.Name, ast.Attribute)) else None
                    if name and name not in derived:
                        derived.add(name)
                        grown = True
        if not grown:
            break
    return derived


def _flow(node: ast.AST) -> tuple[ast.AST | None, list[ast.AST]]:
    """(what is read, what it is bound to) of an assignment, a loop header or a ``with`` item."""
    if isinstance(node, ast.Assign):
        return node.value, list(node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return node.value, [node.target]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return node.iter, [node.target]
    if isinstance(node, ast.Call):  # ``outputs.append(out)``: the container now holds what it was given
        return ast.Tuple(elts=[*node.args, *(k.value for k in node.keywords)], ctx=ast.Load()), [node.func.value]
    if isinstance(node, ast.withitem):
        return node.context_expr, [node.optional_vars] if node.optional_vars is not None else []
    return None, []


def _mentions(expr: ast.AST, names: set[str]) -> bool:
    for node in ast.walk(expr):
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = dotted(node)
            if name and (name in names or any(name.startswith(n + ".") for n in names)):
                return True
    return False
