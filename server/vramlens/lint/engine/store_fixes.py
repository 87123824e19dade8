"""The edit of a storing line: the statement a capture names as keeping memory alive (``outputs.append(out)``,
``metrics[step] = out``, ``self.history += [h]``, ``total += loss``), its stored value rewritten to keep less,
only where the file's text proves the rewrite cannot break the program.

What the holder keeps (graphs, or the tensors themselves) is the capture's to say
(analysis/recommendations/store_edit.py chooses the methods, surest first); this module answers, from the
file alone, which of them are safe:

- every method needs the stored value to be a plain name or attribute proven a tensor (facts/tensor_types.py):
  on a model's output object, a hook's unannotated argument or a conditional, ``.detach()`` may not exist;
- ``.detach()`` needs no use of the holder anywhere in the file to need its graph (facts/fix_safety.py: a
  backward, ``autograd.grad``, a ``.grad``, a hook, a return: ``torch.stack(losses).backward()``,
  ``sum(losses).backward()``), nor to hand it, or what is made from it, to a function of the file (which may);
- ``.detach().cpu()`` and ``.item()`` need every use of the holder in the file to be one that works the same on
  CPU tensors and numbers: counted (``len``), cleared, stored into, or printed. ``torch.cat(outputs)`` needs
  tensors, and ``torch.cat(outputs) == labels`` tensors on the GPU: there only ``.detach()`` is offered;
- ``.item()`` also needs a proven 0-d tensor (a full reduction, a torch loss).

A file that does not parse, a line that holds no single store into ``target``, or a value not proven gets no
edit: a wrong fix is worse than none.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass

from ..facts.evidence import Evidence
from ..facts.file_facts import index_statements, merge_indexes
from ..facts.fix_safety import derived_names, graph_read_in, mentions
from ..facts.tensor_types import TensorTypes
from ..findings import Fix
from ..parse.edits import Positions, detach_edits, insert_after
from ..parse.syntax import call_name, dotted, last_name
from .fixes import apply_fix

METHODS = ("detach", "detach_cpu", "item")
_APPENDERS = {"append", "appendleft", "add", "put", "insert"}
_FILLERS = _APPENDERS | {"extend", "update", "setdefault"}
_CONCATENATORS = {"cat", "concat", "concatenate", "stack", "hstack", "vstack"}
# Calls whose result is the same kind of thing for CPU tensors and numbers alike (climbed through to a printer).
_NEUTRAL_CALLS = frozenset({"len", "sum", "max", "min", "mean", "fmean", "median", "sorted", "round", "abs", "float",
                            "str", "repr", "format"})
_PRINTER_METHODS = frozenset({"write", "info", "debug", "warning", "set_postfix", "set_description"})


@dataclass(frozen=True)
class _Store:
    statement: ast.stmt
    value: ast.AST  # the expression the statement stores
    kind: str  # append | extend | item | augmented | concat
    scope: ast.AST  # the innermost function around it, or the module
    cls: ast.ClassDef | None  # the class of that function, when it is a method


def store_fixes(text: str, line: int, target: str, methods: tuple[str, ...] | list[str]) -> list[tuple[str, Fix]]:
    """(method, fix) for each of ``methods`` ("detach", "detach_cpu", "item"), in their order, that rewrites
    what the statement on ``line`` (1-based) stores into ``target`` (as written: ``self.val_outputs``) and is
    proven safe in ``text``; [] when none is."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    store = _store_at(tree, line, target)
    if store is None or not isinstance(store.value, (ast.Name, ast.Attribute)):
        return []
    facts = merge_indexes([index_statements(tree.body)], tree, header_end=-1)
    types = TensorTypes(facts, Evidence(facts), store.scope, store.cls)
    if not types.is_tensor(store.value):
        return []
    positions = Positions(text)
    stored = f"`{positions.segment(store.value)}`"
    uses = _uses(tree, target)
    # Both off-GPU edits need every use to be a neutral one: walked once, and only when one is asked for.
    neutral = bool({"detach_cpu", "item"} & set(methods)) and _only_counted_or_printed(uses, tree)
    fixes = []
    for method in methods:
        fix = None
        if method == "detach" and not _graph_needed(tree, uses, facts):
            fix = Fix(f"Store {stored} detached (.detach())", detach_edits(positions, store.value))
        elif method == "detach_cpu" and store.kind in ("append", "extend", "item") and neutral:
            fix = Fix(f"Store {stored} on the CPU (.detach().cpu())",
                      (insert_after(positions, store.value, ".detach().cpu()"),))
        elif method == "item" and store.kind != "concat" and types.is_scalar_tensor(store.value) and neutral:
            fix = Fix(f"Store {stored} as a Python number (.item(); waits for the GPU)",
                      detach_edits(positions, store.value, method="item"))
        if fix is not None and apply_fix(text, fix) is not None:
            fixes.append((method, fix))
    return fixes


# -- the statement ------------------------------------------------------------------------------
def _store_at(tree: ast.Module, line: int, target: str) -> _Store | None:
    """The one statement starting on ``line`` that stores into ``target``, with the value it stores."""
    found = []
    for statement, scope, cls in _statements(tree, tree, None):
        if statement.lineno == line:
            value, kind = _stored(statement, target)
            if value is not None:
                found.append(_Store(statement, value, kind, scope, cls))
            elif not isinstance(statement, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef,
                                            ast.AsyncFunctionDef, ast.ClassDef)):
                return None  # another simple statement on the line (`a.append(x); b.append(y)`): not guessed
    return found[0] if len(found) == 1 else None


def _statements(node: ast.AST, scope: ast.AST, cls: ast.ClassDef | None):
    """Every statement under ``node`` with the function it runs in (the module at top level) and that
    function's class when it is a method."""
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.stmt):
            continue
        yield child, scope, cls
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _statements(child, child, node if isinstance(node, ast.ClassDef) else None)
        else:
            yield from _statements(child, scope, cls)


def _stored(statement: ast.stmt, target: str) -> tuple[ast.AST | None, str]:
    """(the stored expression, the store's kind) when ``statement`` stores one value into ``target``."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        func = call.func
        if not isinstance(func, ast.Attribute) or dotted(func.value) != target or call.keywords:
            return None, ""
        if func.attr in _APPENDERS and len(call.args) == (2 if func.attr == "insert" else 1):
            return call.args[-1], "append"
        if func.attr == "extend" and len(call.args) == 1:
            return _single(call.args[0]), "extend"
        return None, ""
    if isinstance(statement, ast.AugAssign) and isinstance(statement.op, ast.Add) and dotted(statement.target) == target:
        if isinstance(statement.value, (ast.List, ast.Tuple)):
            return _single(statement.value), "extend"
        return statement.value, "augmented"
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        written = statement.targets[0]
        value = statement.value
        if isinstance(written, ast.Subscript) and dotted(written.value) == target:
            return value, "item"
        if dotted(written) != target:
            return None, ""
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and dotted(value.left) == target \
                and isinstance(value.right, (ast.List, ast.Tuple)):
            return _single(value.right), "extend"
        if isinstance(value, ast.Call) and last_name(call_name(value)) in _CONCATENATORS and len(value.args) == 1 \
                and isinstance(value.args[0], (ast.List, ast.Tuple)) and len(value.args[0].elts) == 2:
            first, second = value.args[0].elts
            if dotted(first) == target and dotted(second) != target:
                return second, "concat"
    return None, ""


def _single(collection: ast.AST) -> ast.AST | None:
    if isinstance(collection, (ast.List, ast.Tuple)) and len(collection.elts) == 1:
        element = collection.elts[0]
        return None if isinstance(element, ast.Starred) else element
    return None


# -- the holder's uses --------------------------------------------------------------------------
def _uses(tree: ast.Module, target: str) -> list[ast.AST]:
    """Every mention of the holder in the file: its name as written, and (for fear of an alias the file does
    not show) any attribute or name with its last part (``model.val_outputs`` for ``self.val_outputs``)."""
    leaf = last_name(target)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == leaf:
            found.append(node)
        elif isinstance(node, ast.Name) and node.id == leaf:
            found.append(node)
    return found


def _graph_needed(tree: ast.Module, uses: list[ast.AST], facts) -> bool:
    """A use that needs the graph of what the holder keeps, or hands it to a function of the file."""
    places = {dotted(node) for node in uses}
    if None in places:  # `make().outputs`: what it is made from cannot be followed
        return True
    if any(graph_read_in(place, tree) for place in places):
        return True
    derived = derived_names(places, tree)
    own = set(facts.functions) | {name for _cls, name in facts.methods}
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and last_name(call_name(call)) in own \
                and any(mentions(argument, derived) for argument in [*call.args, *(k.value for k in call.keywords)]):
            return True
    return False


def _only_counted_or_printed(uses: list[ast.AST], tree: ast.Module) -> bool:
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    return all(_neutral(node, parents) for node in uses)


def _neutral(node: ast.AST, parents: dict) -> bool:
    """A use that works the same whatever device or type the elements have: stored into, cleared, rebound,
    deleted, counted, or (through sums and formatting) printed."""
    parent = parents.get(id(node))
    if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return True
    if isinstance(parent, ast.Attribute) and parent.value is node:
        if parent.attr == "clear" or parent.attr in _FILLERS:
            call = parents.get(id(parent))
            return isinstance(call, ast.Call) and call.func is parent
        return False
    if isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, (ast.Store, ast.Del)):
        return True
    if isinstance(parent, ast.AugAssign) and parent.target is node:
        return True
    return _printed(node, parents)


def _printed(node: ast.AST, parents: dict) -> bool:
    """``len(x)``, or ``print(f"{sum(x) / len(x):.3f}")``: the use ends in a count or in what is printed."""
    while True:
        parent = parents.get(id(node))
        if isinstance(parent, ast.Call) and node is not parent.func:
            name = call_name(parent)
            if name == "len":
                return True
            if name == "print" or (isinstance(parent.func, ast.Attribute) and parent.func.attr in _PRINTER_METHODS) \
                    or name == "self.log":
                return True
            if name not in _NEUTRAL_CALLS:
                return False
        elif not isinstance(parent, (ast.BinOp, ast.FormattedValue, ast.JoinedStr)):
            return False
        node = parent
