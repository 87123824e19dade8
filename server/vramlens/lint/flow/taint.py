"""A small taint analysis: which values may carry autograd history, and which parameters they come from.

A value's labels say what it may hold: ``G`` (a tensor with autograd history, or a container of them),
``L`` (a leaf that requires grad, such as a parameter: keeping one keeps no graph) and ``@name`` (the
value of parameter ``name``, so that a function's summary can say what it does with each argument).

Sources are forward passes of modules (judged by evidence, see facts/evidence.py), parameters and
functions of the file that return graph. Sanitizers are the operations that return a value without
history (``.item()``, ``.detach()``, ``.data``, ``float()``...). ``.clone()``, ``.cpu()``, ``.to()`` and
``.cuda()`` keep the history, so they propagate like any other tensor operation. With recording off,
no operation makes new history; a name still holds what it held.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from ..facts.evidence import Evidence
from ..facts.file_facts import FileFacts
from ..facts.forwards import DIFFERENTIABLE, FORWARD, FUNCTIONAL, METHOD, NO_GRAD, forward_kind
from ..parse.syntax import annotation_words, call_name, dotted, last_name, scalar_isinstance, sets_keyword
from .summaries import EMPTY, GRAPH, GRAPH_ONLY, LEAF, LEAF_ONLY, MAYBE_ONLY, Labels, computed, unseen

CLEAN_METHODS = frozenset({
    "item", "tolist", "detach", "detach_", "numpy", "size", "dim", "numel", "nelement", "argmax", "argmin",
    "argsort", "nonzero", "long", "int", "bool", "byte", "short", "eq", "ne", "gt", "lt", "ge", "le",
    "isnan", "isinf", "isfinite", "all", "any", "data_ptr", "element_size", "stride", "is_contiguous",
    "get_device", "state_dict", "keys", "__len__", "equal", "allclose", "format", "join", "startswith",
    "endswith", "strip", "lower", "upper", "storage_offset", "untyped_storage", "is_floating_point", "is_complex",
    "signbit", "logical_not", "logical_and", "logical_or", "bincount", "searchsorted",
})
CLEAN_ATTRIBUTES = frozenset({
    "data", "shape", "dtype", "device", "grad", "ndim", "requires_grad", "is_cuda", "is_leaf", "training", "layout",
    "grad_fn", "names", "itemsize", "nbytes", "T_dtype", "config", "__class__", "__name__",
})
CLEAN_FUNCTIONS = frozenset({
    "float", "int", "bool", "len", "str", "repr", "round", "print", "isinstance", "type", "id", "hash", "format",
    "range", "argmax", "argmin", "multinomial", "randint", "zeros_like", "ones_like", "empty_like", "rand_like",
    "randn_like", "full_like", "no_grad", "tensor", "equal", "allclose", "isnan", "isinf", "isfinite",
    "getattr", "hasattr", "setattr", "callable", "max_memory_allocated", "memory_allocated", "open", "from_numpy",
    "is_tensor", "is_grad_enabled", "perf_counter", "isclose",
})
CLEAN_MODULE_PREFIXES = ("np.", "numpy.", "math.", "logging.", "logger.", "os.", "time.", "json.", "wandb.", "re.", "random.", "sys.", "shutil.", "pickle.", "yaml.", "glob.", "tqdm.")
PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})
_AUTOGRAD_GRAD = frozenset({"torch.autograd.grad", "autograd.grad"})
# Tensor methods whose arguments only lend a dtype, device or shape: the result's history is the receiver's.
LIKE_METHODS = frozenset({"to", "type_as", "view_as", "expand_as", "reshape_as", "as_strided"})
# Tensor methods that make a fresh tensor with the receiver's dtype and device and none of its history.
_NEW_TENSOR_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})
# Container methods that hand back (part of) what the receiver holds, without computing.
_CONTAINER_READS = frozenset({"pop", "get", "values", "copy", "popleft", "setdefault", "popitem"})
# Results that are summaries (Python objects), not tensors with history.
_SUMMARY_WORDS = ("stats", "statistics", "metric", "report", "summary")
_PARAMETER_ATTRIBUTES = frozenset({"weight", "bias"})
# A tensor's attributes that are differentiable views of it.
_VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag"})
_NEVER_TAINTED = frozenset({ast.Constant, ast.JoinedStr, ast.Lambda, ast.Compare})
_COMPREHENSIONS = frozenset({ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp})
_COLLECTIONS = frozenset({ast.Tuple, ast.List, ast.Set})
# Builtins that compute from their arguments (``sum(losses)`` keeps every graph) and builtins that only
# repackage them (``list(model.parameters())`` is still a list of leaves).
_COMPUTING_BUILTINS = frozenset({"sum", "max", "min", "abs", "pow", "divmod", "round"})
_CONTAINER_BUILTINS = frozenset({"list", "tuple", "sorted", "reversed", "iter", "next", "zip", "dict", "map", "filter", "set", "enumerate"})
# torch functions that make a new tensor from shapes or data, never from history.
_FACTORIES = frozenset({
    "zeros", "ones", "empty", "full", "eye", "arange", "linspace", "logspace", "rand", "randn", "randint",
    "randperm", "empty_strided", "tril_indices", "triu_indices", "tensor", "as_tensor", "from_numpy", "Generator",
    "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like", "scalar_tensor",
})


def _requires_grad(call: ast.Call) -> bool:
    return any(k.arg == "requires_grad" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords)


@dataclass
class TaintState:
    """What is known at one program point of one scope.

    Elements stored under a constant key (``output["loss"] = ...``) are kept apart from the rest of their
    container, so that overwriting the one graph-carrying element with a detached value cleans it."""

    values: dict[str, Labels] = field(default_factory=dict)  # plain and dotted names -> their labels
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> the container it refers to
    grad_off: bool = False
    elements: dict[str, dict[object, Labels]] = field(default_factory=dict)  # container -> constant key -> labels
    origins: dict[str, frozenset] = field(default_factory=dict)  # a dict's name -> where graph went into it (origins.py)

    def copy(self) -> TaintState:
        elements = {name: dict(keys) for name, keys in self.elements.items()} if self.elements else {}
        return TaintState(dict(self.values), dict(self.aliases), self.grad_off, elements, dict(self.origins))

    def merge(self, other: TaintState) -> None:
        """Join after branches: anything a name may hold on either path, it may hold after them."""
        values = self.values
        for name, labels in other.values.items():
            mine = values.get(name)
            values[name] = labels if mine is None else (mine | labels)
        self.aliases = {k: v for k, v in self.aliases.items() if other.aliases.get(k) == v}
        for name, keys in other.elements.items():
            mine = self.elements.setdefault(name, {})
            for key, labels in keys.items():
                mine[key] = mine.get(key, EMPTY) | labels
        for name, places in other.origins.items():
            self.origins[name] = self.origins.get(name, frozenset()) | places

    def resolve(self, name: str) -> str:
        aliases = self.aliases
        if not aliases:
            return name
        head, _, rest = name.partition(".")
        target = aliases.get(head)
        if target is None:
            return name
        return f"{target}.{rest}" if rest else target

    def get(self, name: str) -> Labels:
        values = self.values
        found = values.get(name)
        if found is None and self.aliases:
            name = self.resolve(name)
            found = values.get(name)
        if self.elements:
            keys = self.elements.get(name)
            if keys:
                for labels in keys.values():
                    found = labels if not found else (found | labels)
        return found or EMPTY

    def element(self, name: str, key: object) -> Labels | None:
        keys = self.elements.get(self.resolve(name))
        return None if keys is None else keys.get(key)

    def set_element(self, name: str, key: object, labels: Labels) -> None:
        self.elements.setdefault(self.resolve(name), {})[key] = labels

    def set(self, name: str, labels: Labels) -> None:
        """Bind ``name`` (and the container it aliases) to ``labels``; the name keeps them after the alias
        is forgotten at a join."""
        resolved = self.resolve(name)
        if self.elements:
            self.elements.pop(resolved, None)
            self.elements.pop(name, None)
        if resolved == name:
            self._forget_members(name)
        if labels:
            self.values[resolved] = labels
            if resolved != name:
                self.values[name] = labels
        else:
            self.values.pop(resolved, None)
            self.values.pop(name, None)

    def add(self, name: str, labels: Labels) -> None:
        if labels:
            resolved = self.resolve(name)
            self.values[resolved] = self.values.get(resolved, EMPTY) | labels
            if resolved != name and name in self.values:
                self.values[name] = self.values[name] | labels

    def _forget_members(self, name: str) -> None:
        """A name bound anew no longer has the attributes of what it held (``outputs.loss``)."""
        prefix = name + "."
        stale = [key for key in self.values if key.startswith(prefix)]
        for key in stale:
            del self.values[key]
        if self.aliases:
            self.aliases = {k: v for k, v in self.aliases.items() if not (v == name or v.startswith(prefix))}


@lru_cache(maxsize=4096)
def is_summary_name(name: str) -> bool:
    """``batch_stats``, ``compute_metrics``: Python summaries rather than tensors."""
    lowered = name.lower()
    return any(word in lowered for word in _SUMMARY_WORDS)


# The verdict on a call named like a summary (``compute_metrics``): no graph, unless it is a function of this file.
SUMMARY_NAMED: Labels = frozenset({"summary-named"})

# A local call's result given the labels of its arguments: None when the callee is not a function of this file.
LocalResult = Callable[[ast.Call, "TaintState"], "Labels | None"]


class TaintEvaluator:
    """Answers "what may this expression hold here?" for one file."""

    def __init__(self, facts: FileFacts, evidence: Evidence, local_result: LocalResult,
                 forward_returns_nothing: Callable[[ast.Call], bool] = lambda call: False) -> None:
        self.facts = facts
        self.evidence = evidence
        self.local_result = local_result
        # A forward whose every return is known to carry nothing (a decoder handing back lists of ints).
        self.forward_returns_nothing = forward_returns_nothing
        self.scope: ast.AST = facts.tree  # set by the walker
        self._forward_kinds: dict[tuple[int, int], str | None] = {}
        self._name_verdicts: dict[int, Labels | None] = {}
        self._scalar_methods: dict[tuple[int, str, str], bool] = {}
        self._held_classes: dict[int, dict[str, set[str | None]]] = {}  # id(class) -> attribute -> classes assigned

    def forward_kind(self, call: ast.Call) -> str | None:
        return forward_kind(self.evidence, call, self.scope)

    def is_forward_call(self, call: ast.Call) -> bool:
        """A forward pass of a module with parameters, by the evidence of this file."""
        return self.forward_kind(call) == FORWARD

    def tainted(self, expr: ast.AST | None, state: TaintState) -> bool:
        return expr is not None and GRAPH in self.labels(expr, state)

    def labels(self, expr: ast.AST, state: TaintState) -> Labels:
        kind = type(expr)
        if kind is ast.Name:
            return state.get(expr.id)
        if kind is ast.Attribute:
            if expr.attr in CLEAN_ATTRIBUTES:
                return EMPTY
            name = dotted(expr)
            if name:
                found = state.get(name)
                if found:
                    return found
                if expr.attr in _PARAMETER_ATTRIBUTES and self.evidence.is_module(expr.value, self.scope):
                    return LEAF_ONLY  # a module's parameter
            inner = self.labels(expr.value, state)
            if inner == LEAF_ONLY and expr.attr not in _VIEW_ATTRIBUTES:
                return EMPTY  # ``param.data0``, ``param.MS``: what code hung on a parameter, not the parameter
            return inner if not state.grad_off else (inner if name else EMPTY)
        if kind in _NEVER_TAINTED:
            return EMPTY
        if kind is ast.Call:
            return self._call(expr, state)
        if kind in _COLLECTIONS:
            return self._union(expr.elts, state)
        if kind is ast.Starred:
            return self.labels(expr.value, state)
        if state.grad_off and kind is not ast.IfExp and kind is not ast.Dict:
            return EMPTY  # no operation records history with recording off
        if kind is ast.BinOp:
            both = self.labels(expr.left, state) | self.labels(expr.right, state)
            if isinstance(expr.op, ast.Add) and (is_sequence(expr.left) or is_sequence(expr.right)):
                return both  # ``[(name, p)] + rest``: a longer list of the same things, not a tensor sum
            return computed(both)
        if kind is ast.UnaryOp:
            return EMPTY if isinstance(expr.op, ast.Not) else computed(self.labels(expr.operand, state))
        if kind is ast.Subscript:
            key = constant_key(expr)
            if key is not None:
                container = dotted(expr.value)
                if container:
                    kept = state.element(container, key)
                    if kept is not None:
                        return kept
            # Indexing a tensor with history gives a view with history; an element of a list of
            # parameters is still a parameter.
            return self.labels(expr.value, state)
        if kind is ast.IfExp:
            # ``loss if isinstance(loss, int) else loss.item()``: where the test shows a name holds no tensor, the
            # branch that is that name carries nothing.
            body = EMPTY if dotted(expr.body) in scalar_isinstance(expr.test) else self.labels(expr.body, state)
            return body | self.labels(expr.orelse, state)
        if kind is ast.Dict:
            return self._union([v for v in expr.values if v is not None], state)
        if kind in _COMPREHENSIONS:
            return self._comprehension(expr, state)
        if kind is ast.BoolOp:
            return self._union(expr.values, state)
        if kind is ast.NamedExpr:
            return self.labels(expr.value, state)
        if kind is ast.Await:
            return self.labels(expr.value, state)
        return EMPTY

    def _union(self, items, state: TaintState) -> Labels:
        found = EMPTY
        for item in items:
            labels = self.labels(item, state)
            if labels:
                found = found | labels
        return found

    def _comprehension(self, expr: ast.AST, state: TaintState) -> Labels:
        """Each generator's target holds what its iterable holds, for the element expression only."""
        saved: dict[str, Labels | None] = {}
        try:
            for generator in expr.generators:
                labels = self.labels(generator.iter, state)
                for node in ast.walk(generator.target):
                    if isinstance(node, ast.Name):
                        saved.setdefault(node.id, state.values.get(node.id))
                        if labels:
                            state.values[node.id] = labels
                        else:
                            state.values.pop(node.id, None)
            if isinstance(expr, ast.DictComp):
                return self.labels(expr.value, state)
            return self.labels(expr.elt, state)
        finally:
            for name, previous in saved.items():
                if previous is None:
                    state.values.pop(name, None)
                else:
                    state.values[name] = previous

    def _by_name(self, call: ast.Call) -> Labels | None:
        """What the callee's name alone says (clean helper, parameters), memoised per call; None: look further."""
        key = id(call)
        if key in self._name_verdicts:
            return self._name_verdicts[key]
        func = call.func
        name = call_name(call)
        is_method = type(func) is ast.Attribute
        short = func.attr if is_method else last_name(name)
        verdict: Labels | None = None
        if is_method and short in CLEAN_METHODS:
            verdict = EMPTY
        elif (not is_method or "." in name) and short in CLEAN_FUNCTIONS and not (is_method and short == "float"):
            verdict = EMPTY
        elif name.startswith(CLEAN_MODULE_PREFIXES) or "tokenizer" in name.lower():
            verdict = EMPTY  # decoded text is a Python object, not a tensor
        elif is_summary_name(short):
            verdict = SUMMARY_NAMED  # summaries are Python objects, unless the file's own function says otherwise
        elif short in PARAMETER_METHODS or short in {"buffers", "named_buffers", "modules", "children", "named_modules"}:
            verdict = LEAF_ONLY if short in PARAMETER_METHODS else EMPTY
        elif name in _AUTOGRAD_GRAD and not _creates_graph(call):
            verdict = EMPTY  # gradients computed without ``create_graph`` have no history of their own
        self._name_verdicts[key] = verdict
        return verdict

    def _scalar_method(self, call: ast.Call) -> bool:
        """``self.num_nodes.get_value(key)`` where ``self.num_nodes`` is always an instance of a class of the file
        (``self.num_nodes = num_nodes`` from ``num_nodes: _NumNodes``, or ``= _NumNodes(...)``) whose method is
        annotated to return a scalar (``-> Optional[int]``): a count or a flag, whatever it was computed from."""
        func = call.func
        if type(func) is not ast.Attribute:
            return False
        held = dotted(func.value) or ""
        if not held.startswith("self.") or held.count(".") != 1:
            return False
        owner = self.facts.enclosing_class(self.scope)
        if owner is None:
            return False
        key = (id(owner), held, func.attr)
        known = self._scalar_methods.get(key)
        if known is None:
            cls = self.facts.classes.get(self._held_class(owner, held) or "")
            method = next((item for item in cls.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and item.name == func.attr), None) if cls is not None else None
            known = self._scalar_methods[key] = method is not None and scalar_annotation(method.returns)
        return known

    def _held_class(self, owner: ast.ClassDef, held: str) -> str | None:
        """The one class of the file every assignment of ``held`` in ``owner`` gives it, by construction or by
        the annotation of the parameter assigned; None when any assignment says otherwise or none is found."""
        table = self._held_classes.get(id(owner))
        if table is None:
            table = self._held_classes[id(owner)] = _assigned_classes(owner, self.facts)
        found = table.get(held, set())
        if len(found) != 1:
            return None
        name = next(iter(found))
        return name if name in self.facts.classes else None

    def _call(self, call: ast.Call, state: TaintState) -> Labels:
        verdict = self._by_name(call)
        if verdict is SUMMARY_NAMED:
            # ``get_batch_loss_metrics`` of the file is judged by its summary: a name is no evidence
            local = self.local_result(call, state)
            return EMPTY if local is None else local
        if verdict is not None:
            return verdict
        if any(is_detaching_callable(a) for a in call.args):
            return EMPTY  # ``apply_to_tensor(hidden, torch.Tensor.detach)``: detach mapped over a structure
        if self._is_factory(call):
            return LEAF_ONLY if _requires_grad(call) else EMPTY
        if self._builds_optimizer(call):
            return EMPTY  # an optimizer or scheduler holds parameters (leaves), never graph
        if self._scalar_method(call):
            return EMPTY
        kind = self.forward_kind(call)
        if kind == NO_GRAD:
            return EMPTY
        if kind == FORWARD:
            if state.grad_off or self.forward_returns_nothing(call):
                return EMPTY
            return GRAPH_ONLY | self._arguments(call, state)
        local = self.local_result(call, state)
        if local is not None:
            return local
        if state.grad_off:
            # No new history; a container method may still hand back what the container holds.
            func = call.func
            if type(func) is ast.Attribute and func.attr in _CONTAINER_READS:
                return self.labels(func.value, state)
            return EMPTY
        if kind == FUNCTIONAL:
            return computed(self._arguments(call, state))
        if kind in (None, METHOD, DIFFERENTIABLE) and self.held_result(call) is not None:
            return GRAPH_ONLY | self._arguments(call, state)  # the class backpropagates this very result
        if kind == METHOD or kind == DIFFERENTIABLE:
            # A network or loss this file cannot see into: it may add graph to what it is given, or not.
            return unseen(self._arguments(call, state)) | MAYBE_ONLY
        func = call.func
        if type(func) is ast.Attribute:
            short = func.attr
            receiver = self.labels(func.value, state)
            if short in _CONTAINER_READS:
                return receiver
            if short in _NEW_TENSOR_METHODS:
                return LEAF_ONLY if _requires_grad(call) else EMPTY  # ``w.new_zeros(shape)``: a fresh tensor, no history
            if short in LIKE_METHODS:
                return computed(receiver)  # ``consts.type_as(hidden)``: only dtype and device come from the argument
            if receiver:
                return computed(receiver | self._arguments(call, state))  # a tensor method: ``out.mean()``
            arguments = self._arguments(call, state)
            if not arguments:
                return EMPTY
            return computed(arguments) if self._torch_function(call) else unseen(arguments)
        arguments = self._arguments(call, state)
        if not arguments:
            return EMPTY
        short = last_name(call_name(call))
        if short[:1].isupper() and not short.isupper():
            # An object built around its arguments: an optimizer holds leaves (no graph); a distribution
            # built from probabilities holds them.
            return unseen(arguments - LEAF_ONLY)
        if short in _CONTAINER_BUILTINS:
            return arguments
        if short in _COMPUTING_BUILTINS or self._torch_function(call):
            return computed(arguments)
        return unseen(arguments)  # a function of another file: it may detach, or reduce to numbers

    def held_result(self, call: ast.Call, position: int | None = None) -> Labels | None:
        """GRAPH for ``self.model.get_labels_and_loss(batch)`` (at ``position``) when a method of the class
        backpropagates that result of it; None when nothing says so."""
        name = dotted(call.func)
        if name and self.evidence.held_result_backpropagated(name, self.scope, position):
            return GRAPH_ONLY
        return None

    def _torch_function(self, call: ast.Call) -> bool:
        """``torch.cat``, ``F.relu``, ``cat`` imported from torch: tensor operations, which keep history."""
        name = call_name(call)
        if not name:
            return False
        head, _, rest = name.partition(".")
        if head in ("self", "cls") and rest.startswith("torch."):
            head = "torch"  # ``self.torch = torch`` kept on the object: ``self.torch.zeros(...)``
        if head == "torch" or head == self.facts.torch_alias:
            return True
        return self.facts.imports.get(head, "").startswith("torch")

    def _builds_optimizer(self, call: ast.Call) -> bool:
        """``torch.optim.SGD(params)``, ``optim.lr_scheduler.StepLR(opt)``, ``AdamW`` imported from torch.optim."""
        name = call_name(call)
        head, dot, rest = name.partition(".")
        qualified = f"{self.facts.imports.get(head, head)}{dot}{rest}"
        return qualified.startswith("torch.optim.") and last_name(name)[:1].isupper()

    def _is_factory(self, call: ast.Call) -> bool:
        """``torch.zeros(shape)``: a new tensor, whatever its arguments carry."""
        name = call_name(call)
        short = last_name(name)
        return short in _FACTORIES and self._torch_function(call)

    def _arguments(self, call: ast.Call, state: TaintState) -> Labels:
        found = EMPTY
        for arg in call.args:
            labels = self.labels(arg, state)
            if labels:
                found = found | labels
        for kw in call.keywords:
            labels = self.labels(kw.value, state)
            if labels:
                found = found | labels
        return found


_DETACHERS = frozenset({"detach", "item", "tolist"})


_SCALAR_LEAVES = frozenset({"int", "bool", "str", "bytes", "None", "device", "dtype", "Size"})
_SCALAR_WRAPPERS = frozenset({"Optional", "Union", "Tuple", "tuple", "List", "list", "Dict", "dict", "Literal",
                              "torch", "typing"})


def scalar_annotation(annotation: ast.AST | None) -> bool:
    """``-> int``, ``-> Optional[int]``, ``-> Tuple[int, str]``: a return that cannot hold a tensor. Not a bare
    ``dict`` or ``list`` (they may hold losses), nor ``float`` (a 0-d tensor passes for one)."""
    if annotation is None:
        return False
    words = annotation_words(annotation)
    return bool(words & _SCALAR_LEAVES) and words <= _SCALAR_LEAVES | _SCALAR_WRAPPERS


def is_detaching_callable(node: ast.AST) -> bool:
    """``torch.Tensor.detach`` handed as a function, or ``lambda t: t.detach()`` (``.detach().cpu()`` too)."""
    if isinstance(node, ast.Attribute):
        return node.attr in _DETACHERS and dotted(node.value) in {"torch.Tensor", "Tensor"}
    if not isinstance(node, ast.Lambda) or len(node.args.args) != 1:
        return False
    argument = node.args.args[0].arg
    body = node.body
    while isinstance(body, ast.Call) and isinstance(body.func, ast.Attribute):
        if body.func.attr in _DETACHERS and isinstance(body.func.value, ast.Name) and body.func.value.id == argument:
            return True
        body = body.func.value
    return False


def is_sequence(node: ast.AST) -> bool:
    """A list or tuple display, comprehension or conversion: ``+`` on it concatenates."""
    if isinstance(node, (ast.List, ast.ListComp, ast.Tuple)):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"list", "tuple", "sorted"}


def constant_key(subscript: ast.Subscript) -> object | None:
    """``d["loss"]`` -> "loss"; None for any other index."""
    index = subscript.slice
    if isinstance(index, ast.Constant) and isinstance(index.value, (str, int)) and not isinstance(index.value, bool):
        return index.value
    return None


def _creates_graph(call: ast.Call) -> bool:
    """``create_graph=`` anything but a literal false (or given by position, the fifth argument), or keywords
    unpacked from a dict: the gradients may carry history (a gradient penalty, a Hessian-vector product)."""
    return len(call.args) >= 5 or sets_keyword(call, ("create_graph",)) or any(k.arg is None for k in call.keywords)


__all__ = ["CLEAN_ATTRIBUTES", "CLEAN_METHODS", "LEAF", "TaintEvaluator", "TaintState", "is_summary_name"]


def _assigned_classes(owner: ast.ClassDef, facts: FileFacts) -> dict[str, set[str | None]]:
    """For each attribute ``owner``'s methods assign: the classes the assignments give it (a constructor called, or
    a parameter's annotation; None for anything else), read from the file's index of assignments."""
    table: dict[str, set[str | None]] = {}
    for method in owner.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        annotations = {a.arg: a.annotation for a in method.args.posonlyargs + method.args.args + method.args.kwonlyargs}
        for node in facts.stores_within_all(method):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)):
                continue
            value = node.value
            if isinstance(value, ast.Call):
                given = dotted(value.func)
            elif isinstance(value, ast.Name):
                annotation = annotations.get(value.id)
                given = dotted(annotation) if annotation is not None else None
            else:
                given = None
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                name = dotted(target)
                if name:
                    table.setdefault(name, set()).add(given)
    return table
