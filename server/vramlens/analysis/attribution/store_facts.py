"""The statements of one source file that store a value into something that outlives them.

Pure facts from ``ast``, no judgement: ``X.append(v)``, ``X.extend(v)``, ``X += v``, ``X[k] = v``,
``X = torch.cat([X, v])``, ``setattr(obj, "name", v)``, ``self.X = v``, ``backward(retain_graph=True)``,
and the assignments a line makes (``logits = model(x)``), each with the function and loops it sits in.
analysis/attribution/storing.py joins them with what the census and the step model found.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

APPENDING = {"append": "append", "extend": "extend", "insert": "append", "appendleft": "append", "add": "append",
             "update": "update", "setdefault": "item", "put": "append"}
CONCATENATING = {"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack"}
MAX_SOURCE = 4 << 20  # characters: a larger file is not parsed to find one statement


@dataclass(frozen=True)
class Store:
    """One statement that puts a value into a container or an attribute."""

    line: int  # 1-based
    kind: str  # append | extend (X += [v] too) | update | augmented (a running sum) | item | concat | setattr |
    # built (X = [f(x) for x in xs]) | attribute | retain_graph
    target: str  # the container as written: "all_logits", "self.val_outputs", "metrics"
    function: str | None  # the enclosing function ("validation_step"), None at module level
    loop: tuple[int, int] | None  # the innermost enclosing for/while loop's lines
    reads: frozenset  # the names the stored value reads ("logits", "loss")
    moves_off: bool = False  # the stored value is made off the GPU or a number (`x.cpu()`, `loss.item()`)
    method: str | None = None  # the container's method that stores ("append"), for a call
    functions: tuple = ()  # every enclosing function, outermost first (a hook defined inside main: main, hook)
    reads_grad: bool = False  # the stored value reads a gradient (`p.grad`, `torch.autograd.grad(...)`)

    @property
    def leaf(self) -> str:
        """The target's last name: ``val_outputs`` of ``self.val_outputs``."""
        return self.target.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Binding:
    """``name = …`` (or ``a, b = …``) at one line: which names the statement binds."""

    line: int
    end_line: int
    names: tuple[str, ...]
    function: str | None
    loop: tuple[int, int] | None
    reads: frozenset = frozenset()  # the names its value reads
    reads_grad: bool = False  # its value reads a gradient (`[p.grad for p in model.parameters()]`)


@dataclass
class FileFacts:
    stores: list[Store]
    bindings: list[Binding]
    calls: dict  # callee's last name -> [line] of calls in this file ("TrainingArguments", "load", "generate")
    keywords: dict  # (callee, keyword) -> [line]
    methods: set = field(default_factory=set)  # names of the methods the file's classes define ("add", "update")
    backwards: list = field(default_factory=list)  # (line, function, innermost loop) of every `….backward(…)` call


def dotted(node: ast.AST) -> str | None:
    """``self.val_outputs`` for an attribute chain, ``metrics`` for a name; a subscript's container."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    if isinstance(node, ast.Subscript):
        return dotted(node.value)
    return None


def _reads(node: ast.AST | None) -> frozenset:
    if node is None:
        return frozenset()
    return frozenset(child.id for child in ast.walk(node) if isinstance(child, ast.Name))


# Methods and calls whose result is the gradient whole (a copy, a view), not a number made from it.
_GRAD_WHOLE = {"clone", "detach", "to", "cuda", "contiguous", "view", "reshape", "flatten", "float", "half",
               "bfloat16", "list", "tuple", "dict"} | CONCATENATING


def _reads_grad(node: ast.AST | None) -> bool:
    """Whether a value reads what a backward pass made, whole: a ``.grad`` attribute (``p.grad``,
    ``p.grad.clone()``; ``torch.autograd.grad(…)`` too, whose result is gradients), not a number made from
    it (``p.grad.norm()``, ``torch.norm(p.grad)``)."""
    if node is None:
        return False
    parents = {child: parent for parent in ast.walk(node) for child in ast.iter_child_nodes(parent)}
    for child in ast.walk(node):
        if isinstance(child, ast.Attribute) and child.attr == "grad" and isinstance(child.ctx, ast.Load):
            if _kept_whole(child, parents):
                return True
    return False


def _kept_whole(node: ast.AST, parents: dict) -> bool:
    """Up from a ``.grad`` read: through the methods and calls that keep it whole, to what is stored."""
    while node in parents:
        parent = parents[node]
        if isinstance(parent, ast.Attribute) and parent.value is node:
            call = parents.get(parent)
            if not (isinstance(call, ast.Call) and call.func is parent):
                return False  # p.grad.data, p.grad.shape: read on, not kept as such
            if parent.attr not in _GRAD_WHOLE and parent.attr != "grad":
                return False  # p.grad.norm(): a number made from it
            node = call
            continue
        if isinstance(parent, ast.Call) and node in parent.args:
            if _callee(parent) not in _GRAD_WHOLE and dotted(parent.func) not in ("autograd.grad", "torch.autograd.grad"):
                return False  # torch.norm(p.grad)
        node = parent
    return True


def _callee(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _bound_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _bound_names(element)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


class _Collector(ast.NodeVisitor):
    def __init__(self) -> None:
        self.facts = FileFacts([], [], {}, {})
        self.functions: list[str] = []
        self.loops: list[tuple[int, int]] = []

    def _place(self) -> tuple[str | None, tuple[int, int] | None]:
        return (self.functions[-1] if self.functions else None), (self.loops[-1] if self.loops else None)

    def _store(self, node: ast.AST, kind: str, target: str | None, value: ast.AST | None, method: str | None = None) -> None:
        if target:
            function, loop = self._place()
            self.facts.stores.append(Store(node.lineno, kind, target, function, loop, _reads(value), _moves_off(value),
                                           method, tuple(self.functions), _reads_grad(value)))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.facts.methods.update(item.name for item in node.body
                                  if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))
        self.generic_visit(node)

    def _function(self, node) -> None:
        self.functions.append(node.name)
        saved, self.loops = self.loops, []  # a loop around a definition does not run its body
        self.generic_visit(node)
        self.loops = saved
        self.functions.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def _loop(self, node) -> None:
        self.loops.append((node.lineno, node.end_lineno or node.lineno))
        self.generic_visit(node)
        self.loops.pop()

    visit_For = visit_AsyncFor = visit_While = _loop

    def visit_Call(self, node: ast.Call) -> None:
        callee = _callee(node)
        if callee:
            self.facts.calls.setdefault(callee, []).append(node.lineno)
            for keyword in node.keywords:
                if keyword.arg:
                    self.facts.keywords.setdefault((callee, keyword.arg), []).append(node.lineno)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in APPENDING and node.args:
            self._store(node, APPENDING[func.attr], dotted(func.value), node.args[-1], func.attr)
        elif callee == "setattr" and len(node.args) == 3 and isinstance(node.args[1], ast.Constant):
            base = dotted(node.args[0])
            if base and isinstance(node.args[1].value, str):
                self._store(node, "setattr", f"{base}.{node.args[1].value}", node.args[2])
        if callee == "backward" and isinstance(func, ast.Attribute):
            self.facts.backwards.append((node.lineno, *self._place()))
        if callee == "backward" and any(k.arg == "retain_graph" and isinstance(k.value, ast.Constant) and k.value.value
                                        for k in node.keywords):
            self._store(node, "retain_graph", dotted(func.value) if isinstance(func, ast.Attribute) else "backward", None)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.op, ast.Add):
            # `X += [v]` grows a list (an extend); `total += loss` is a running sum
            grows = isinstance(node.value, (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp))
            self._store(node, "extend" if grows else "augmented", dotted(node.target), node.value)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Subscript):
                self._store(node, "item", dotted(target.value), node.value)
            elif isinstance(target, ast.Attribute):
                name = dotted(target)
                if _added_to(node.value, name):  # self.X = self.X + [v]
                    self._store(node, _sum_kind(node.value.right), name, node.value.right)
                else:
                    self._store(node, "concat" if _concat_of(node.value, name) else "attribute", name, node.value)
            elif isinstance(target, ast.Name) and _concat_of(node.value, target.id):
                self._store(node, "concat", target.id, node.value)
            elif isinstance(target, ast.Name) and _added_to(node.value, target.id):  # X = X + [v]
                self._store(node, _sum_kind(node.value.right), target.id, node.value.right)
            elif isinstance(target, ast.Name) and isinstance(node.value, (ast.ListComp, ast.DictComp, ast.SetComp)):
                self._store(node, "built", target.id, node.value)  # X = [f(x) for x in xs]: filled where it is made
        names = tuple(name for target in node.targets for name in _bound_names(target))
        if names:
            function, loop = self._place()
            self.facts.bindings.append(Binding(node.lineno, node.end_lineno or node.lineno, names, function, loop,
                                               _reads(node.value), _reads_grad(node.value)))
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None and isinstance(node.target, ast.Name):
            function, loop = self._place()
            self.facts.bindings.append(Binding(node.lineno, node.end_lineno or node.lineno, (node.target.id,), function,
                                               loop, _reads(node.value), _reads_grad(node.value)))
        self.generic_visit(node)


OFF_DEVICE = {"cpu", "item", "tolist", "numpy"}


def _moves_off(value: ast.AST | None) -> bool:
    """``x.cpu()``, ``loss.item()``, ``[h.mean().cpu()]``: what is stored keeps no GPU memory. A conditional
    (``loss.item() if fixed else loss``) may keep it either way, so it does not count."""
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        return bool(value.elts) and all(_moves_off(element) for element in value.elts)
    if isinstance(value, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
        return _moves_off(value.elt)
    if isinstance(value, ast.Dict):
        return bool(value.values) and all(_moves_off(item) for item in value.values)
    if isinstance(value, ast.DictComp):
        return _moves_off(value.value)
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
        return False
    if value.func.attr == "to":  # x.to("cpu"), x.to(device="cpu")
        places = list(value.args[:1]) + [k.value for k in value.keywords if k.arg == "device"]
        return any(isinstance(place, ast.Constant) and place.value == "cpu" for place in places)
    return value.func.attr in OFF_DEVICE


def _sum_kind(added: ast.AST) -> str:
    return "extend" if isinstance(added, (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp)) else "augmented"


def _added_to(value: ast.AST, name: str | None) -> bool:
    return bool(name) and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and dotted(value.left) == name


def _concat_of(value: ast.AST, name: str | None) -> bool:
    """``torch.cat([X, v])``: a new tensor made of the old one and more, bound to the old one's name."""
    if not name or not isinstance(value, ast.Call) or _callee(value) not in CONCATENATING or not value.args:
        return False
    first = value.args[0]
    return isinstance(first, (ast.List, ast.Tuple)) and any(dotted(element) == name for element in first.elts)


def file_facts(text: str) -> FileFacts | None:
    """The facts of one file's text, or None when it is not Python this interpreter can parse."""
    if len(text) > MAX_SOURCE:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    collector = _Collector()
    try:
        collector.visit(tree)
    except RecursionError:
        return None
    return collector.facts
