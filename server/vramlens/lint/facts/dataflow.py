"""Name-level dataflow of one scope: which names a value flows into, and which names a backward reads.

Flow-insensitive on purpose: it answers "is anything computed from X ever fed to backward here?",
which is how a buffer kept on purpose (``total_loss += loss`` ... ``total_loss.backward()``) is told
from a leak. An element taken by an index (``losses[-1]``, ``losses[i - 1]``) is not the whole
container, so backpropagating the newest loss does not consume the older ones kept next to it;
a slice, an index that is a plain name (``losses[k]`` in a loop over them), ``sum(losses)`` or
``torch.stack(losses)`` reads them all.
"""

from __future__ import annotations

import ast

from ..parse.syntax import dotted, is_backward_call

_CONTAINER_WRITES = frozenset({"append", "extend", "insert", "add", "update", "appendleft", "push", "put", "setdefault", "__setitem__"})
ELEMENT = "[]"  # suffix of a name read through a constant index


def names_read(node: ast.AST) -> set[str]:
    """Plain and dotted names read in ``node``; ``xs[-1]`` reads ``xs[]`` (one element), not ``xs``."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        kind = type(current)
        if kind is ast.Name:
            found.add(current.id)
            continue
        if kind is ast.Attribute:
            name = dotted(current)
            if name:
                while True:  # ``loss.backward`` reads ``loss`` too
                    found.add(name)
                    head, dot, _ = name.rpartition(".")
                    if not dot:
                        break
                    name = head
                continue
            stack.append(current.value)
            continue
        if kind is ast.Subscript and not isinstance(current.slice, (ast.Slice, ast.Tuple, ast.Name)):
            base = dotted(current.value)
            if base:
                found.add(base + ELEMENT)
                if "." in base:
                    found |= names_read(current.value) - {base}
                found |= names_read(current.slice)  # the index is read too
                continue
        for child in ast.iter_child_nodes(current):
            if isinstance(child, ast.expr) or isinstance(child, (ast.keyword, ast.comprehension, ast.Starred)):
                stack.append(child)
    return found


def _targets(stmt: ast.stmt) -> list[ast.AST]:
    if isinstance(stmt, ast.Assign):
        return stmt.targets
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        return [stmt.target]
    return []


def stored_names(target: ast.AST) -> set[str]:
    """Names a target binds or writes into (``d[k] = v`` writes into ``d``)."""
    found: set[str] = set()
    stack = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Tuple, ast.List)):
            stack.extend(node.elts)
        elif isinstance(node, ast.Starred):
            stack.append(node.value)
        elif isinstance(node, ast.Subscript):
            base = node.value
            while isinstance(base, ast.Subscript):
                base = base.value
            name = dotted(base)
            if name:
                found.add(name)
        else:
            name = dotted(node)
            if name:
                found.add(name)
    return found


def assignment_edges(stmt: ast.stmt) -> list[tuple[set[str], set[str]]]:
    """(names written, names read) pairs of an assignment, position by position where the value shows its
    parts: ``a, b = x, y`` and ``model, opt = accelerator.prepare(model, opt)`` pair each target with its own."""
    value = getattr(stmt, "value", None)
    if value is None:
        return []
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    edges = []
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in target.elts):
            parts = _parts(value, len(target.elts))
            if parts is not None:
                edges.extend((stored_names(t), names_read(p)) for t, p in zip(target.elts, parts))
                continue
        read = names_read(value)
        if isinstance(stmt, ast.AugAssign):
            read |= stored_names(stmt.target)
        edges.append((stored_names(target), read))
    return edges


def _parts(value: ast.AST, count: int) -> list[ast.AST] | None:
    if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == count:
        return list(value.elts)
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in {"prepare", "setup"}
            and len(value.args) == count and not value.keywords):
        return list(value.args)  # accelerator.prepare / fabric.setup hand their arguments back in order
    return None


def scope_edges(stores: list[ast.stmt], calls: list[ast.Call], loops: list[ast.stmt]) -> list[tuple[set[str], set[str]]]:
    """The edges of one scope's assignments, loop targets and container writes."""
    edges: list[tuple[set[str], set[str]]] = []
    for stmt in stores:
        edges.extend(assignment_edges(stmt))
    for loop in loops:
        if isinstance(loop, (ast.For, ast.AsyncFor)):
            edges.append((stored_names(loop.target), names_read(loop.iter)))
    for call in calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _CONTAINER_WRITES:
            container = dotted(func.value)
            if container:
                read: set[str] = set()
                for arg in [*call.args, *(k.value for k in call.keywords)]:
                    read |= names_read(arg)
                edges.append(({container}, read))
    return edges


def backward_reads(calls: list[ast.Call]) -> list[set[str]]:
    return [names_read(call) for call in calls if is_backward_call(call)]


class Dataflow:
    """Edges (targets <- names read) of a scope's assignments, loops and container writes, and the names
    each backward call reads. ``edges`` may be a callable that builds them: they are only needed when
    something is backpropagated at all."""

    def __init__(self, edges, reads: list[set[str]]) -> None:
        self.backward_reads = reads
        self._edges = edges

    @property
    def edges(self) -> list[tuple[set[str], set[str]]]:
        if callable(self._edges):
            self._edges = self._edges() if self.backward_reads else []
        return self._edges

    @classmethod
    def of(cls, stores: list[ast.stmt], calls: list[ast.Call], loops: list[ast.stmt],
           extra_backward_reads: list[set[str]] | None = None) -> "Dataflow":
        reads = backward_reads(calls) + list(extra_backward_reads or ())
        return cls(lambda: scope_edges(stores, calls, loops), reads)

    def derived(self, seeds: set[str], rounds: int = 6, elements: bool = False) -> set[str]:
        """``seeds`` and every name computed from them; with ``elements``, from an element of one too (``cost =
        pred[0].mean()``), where what matters is whether a value's graph goes on at all, not which slot of a
        container holds it."""
        derived = set(seeds)
        meets = _meets if elements else _reads_one
        for _ in range(rounds):
            grown = False
            for stored, read in self.edges:
                if not stored <= derived and meets(read, derived):
                    derived |= stored
                    grown = True
            if not grown:
                break
        return derived

    def reaches_backward(self, seeds: set[str]) -> bool:
        if not self.backward_reads:
            return False
        derived = self.derived(seeds)
        return any(read & derived for read in self.backward_reads)


def _reads_one(read: set[str], names: set[str]) -> bool:
    return bool(read & names)


def _meets(read: set[str], names: set[str]) -> bool:
    """``read`` reads one of ``names``, or an element of one (``pred[]``)."""
    return bool(read & names) or any(r.endswith(ELEMENT) and r[: -len(ELEMENT)] in names for r in read)


def backward_targets(call: ast.Call) -> list[ast.AST]:
    """The expressions a backward call differentiates: ``loss`` in ``loss.backward()``,
    ``accelerator.backward(loss)``, ``scaler.scale(loss).backward()``, ``torch.autograd.grad(loss, params)``."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return list(call.args[:1])
    receiver = func.value
    if func.attr == "grad" or (call.args and func.attr in {"backward", "manual_backward"} and not _looks_like_tensor(receiver)):
        return list(call.args[:1])
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and receiver.func.attr == "scale" and receiver.args:
        return [receiver.args[0]]
    return [receiver]


def _looks_like_tensor(receiver: ast.AST) -> bool:
    """``loss.backward(gradient)`` differentiates ``loss``; ``accelerator.backward(loss)`` its argument."""
    name = dotted(receiver) or ""
    return not name or name.split(".")[-1] not in {"accelerator", "fabric", "self", "engine", "trainer", "autograd", "model_engine", "scaler", "amp", "strategy"}
