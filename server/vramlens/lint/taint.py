"""A small taint analysis: which values may carry autograd history.

Sources are calls of models, layers and losses, tensor operations on their results and
parameters. Sanitizers are the operations that return a value without history
(``.item()``, ``.detach()``, ``.data``, ``float()``...). ``.clone()``, ``.cpu()``, ``.to()`` and
``.cuda()`` keep the history, so they propagate taint like any other tensor operation.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from .facts import FileFacts
from .syntax import CHILD_FIELDS, call_name, dotted, last_name, looks_like_model, name_words

CLEAN_METHODS = frozenset({
    "item", "tolist", "detach", "detach_", "numpy", "size", "dim", "numel", "nelement", "argmax", "argmin",
    "argsort", "nonzero", "long", "int", "bool", "byte", "short", "eq", "ne", "gt", "lt", "ge", "le",
    "isnan", "isinf", "isfinite", "all", "any", "data_ptr", "element_size", "stride", "is_contiguous",
    "get_device", "state_dict", "keys", "__len__", "equal", "allclose",
})
CLEAN_ATTRIBUTES = frozenset({
    "data", "shape", "dtype", "device", "grad", "ndim", "requires_grad", "is_cuda", "is_leaf", "training", "layout",
})
CLEAN_FUNCTIONS = frozenset({
    "float", "int", "bool", "len", "str", "repr", "round", "print", "isinstance", "type", "id", "hash", "format",
    "range", "argmax", "argmin", "multinomial", "randint", "zeros_like", "ones_like", "empty_like", "rand_like",
    "randn_like", "full_like", "no_grad", "tensor", "equal", "allclose", "isnan", "isinf", "isfinite",
    "getattr", "hasattr", "setattr", "callable", "max_memory_allocated", "memory_allocated",
})
CLEAN_MODULE_PREFIXES = ("np.", "numpy.", "math.", "logging.", "logger.", "os.", "time.", "json.", "wandb.", "re.")
# Methods of a module that manage it rather than run it.
MODULE_MANAGEMENT = frozenset({
    "eval", "train", "to", "cuda", "cpu", "state_dict", "load_state_dict", "parameters", "named_parameters", "zero_grad",
    "apply", "modules", "children", "named_modules", "named_children", "half", "float", "double", "bfloat16",
    "requires_grad_", "register_buffer", "register_forward_hook", "register_full_backward_hook", "buffers",
    "register_parameter", "add_module", "save_pretrained", "get_submodule", "extra_repr", "type",
})
PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})
# Methods of plain containers and helpers whose receiver name may still look like a model ("losses").
NOT_FORWARD_METHODS = frozenset({
    "append", "extend", "insert", "pop", "get", "items", "keys", "values", "update", "clear", "copy", "add",
    "remove", "index", "count", "sort", "join", "split", "format", "write", "read", "close", "log", "info",
    "save", "load", "size", "numel", "dim", "reset", "zero_", "fill_", "setdefault",
})
# Tensor methods whose arguments only lend a dtype, device or shape: the result's history is the receiver's.
LIKE_METHODS = frozenset({"to", "type_as", "view_as", "expand_as", "reshape_as", "as_strided"})
# Receiver words strong enough to make ``x.method(...)`` a forward pass (``conv_out.max()`` is a tensor op).
STRONG_MODEL_WORDS = frozenset({
    "model", "net", "network", "encoder", "decoder", "backbone", "generator", "discriminator", "classifier",
    "transformer", "policy", "critic", "actor", "teacher", "student", "vae", "unet", "criterion", "ema",
})
_NOT_A_FORWARD_PREFIXES = (
    "build_", "create_", "make_", "get_", "load_", "init_", "set_", "save_", "log_", "register_", "new_", "can_",
    "has_", "is_", "adjust_", "tie_", "post_", "resize_", "enable_", "disable_", "print_", "num_",
)
# Model methods that switch recording off themselves (Hugging Face ``generate`` is decorated with no_grad).
NO_GRAD_METHODS = frozenset({"generate"})
# Results that are summaries (Python objects), not tensors with history.
_SUMMARY_WORDS = ("stats", "statistics", "metric", "report", "summary")


@dataclass
class TaintState:
    """What is known at one program point of one scope."""

    names: set[str] = field(default_factory=set)  # plain and dotted names that may carry history
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> the container it refers to
    grad_off: bool = False

    def copy(self) -> TaintState:
        return TaintState(set(self.names), dict(self.aliases), self.grad_off)

    def merge(self, other: TaintState) -> None:
        """Join after branches: anything tainted on either path stays tainted."""
        self.names |= other.names
        self.aliases = {k: v for k, v in self.aliases.items() if other.aliases.get(k) == v}

    def resolve(self, name: str) -> str:
        aliases = self.aliases
        if not aliases:
            return name
        head, _, rest = name.partition(".")
        target = aliases.get(head)
        if target is None:
            return name
        return f"{target}.{rest}" if rest else target


def _is_constructor(short: str) -> bool:
    """``DecoderBlock(config)`` builds a module; it does not run one (``G(z)`` and ``D(x)`` do)."""
    return len(short) > 1 and short[0].isupper() and not short.isupper()


_PARAMETER_ATTRIBUTES = frozenset({"weight", "bias"})
_NEVER_TAINTED = frozenset({ast.Constant, ast.JoinedStr, ast.Lambda, ast.Compare})


@lru_cache(maxsize=4096)
def _strong_model_name(name: str) -> bool:
    return bool(name) and any(word in STRONG_MODEL_WORDS or word.endswith(("net", "model")) for word in name_words(last_name(name)))


@lru_cache(maxsize=4096)
def is_summary_name(name: str) -> bool:
    """``batch_stats``, ``compute_metrics``: Python summaries rather than tensors."""
    lowered = name.lower()
    return any(word in lowered for word in _SUMMARY_WORDS)


class TaintEvaluator:
    """Answers "may this expression carry autograd history here?" for one file."""

    def __init__(self, facts: FileFacts, returns_graph: Callable[..., bool | None]) -> None:
        self.facts = facts
        self.returns_graph = returns_graph
        self._model_calls: dict[int, bool] = {}  # id(call) -> is_model_call, for this file's nodes
        self._name_verdicts: dict[int, bool | None] = {}  # id(call) -> what the callee's name says

    def is_model_call(self, call: ast.Call) -> bool:
        """A call that runs a network, a layer or a loss (the sources of the analysis)."""
        key = id(call)
        known = self._model_calls.get(key)
        if known is None:
            known = self._model_calls[key] = self._is_model_call(call)
        return known

    def _is_model_call(self, call: ast.Call) -> bool:
        func = call.func
        name = dotted(func) or ""
        if name in self.facts.module_names or name in {"self", "self.forward"}:
            return True  # ``self(idx)`` inside a module runs its own forward
        short = (func.attr if isinstance(func, ast.Attribute) else last_name(name)).lstrip("_")
        if short.startswith(_NOT_A_FORWARD_PREFIXES) or _is_constructor(short):
            return False
        if isinstance(func, ast.Attribute):
            receiver = dotted(func.value) or ""
            if func.attr in MODULE_MANAGEMENT or func.attr in CLEAN_METHODS:
                return False
            if func.attr in NOT_FORWARD_METHODS or func.attr in NO_GRAD_METHODS:
                return False
            if receiver in self.facts.module_names or _strong_model_name(receiver):
                return True  # model.encode(x), self.backbone.forward_features(x)
            if receiver == "self" and self.returns_graph(call) is not None:
                return False  # a method of this class: judged by what it returns
            if receiver not in {"self", "cls"}:
                # ``program.module()``: a method name says little, except a loss (``agent.loss(obs)``).
                return "loss" in name_words(func.attr)
        if name.startswith(("nn.", "torch.nn.")) or name.startswith(CLEAN_MODULE_PREFIXES):
            return False
        return bool(name) and looks_like_model(name)

    def is_forward_call(self, call: ast.Call) -> bool:
        """A forward pass for sure: ``model(x)``, ``self.net(x)``, ``model.forward(x)``, or ``known_module.method(x)``.

        Stricter than ``is_model_call``: ``self.sp_model.encode(text)`` may well be a tokenizer.
        """
        if not self.is_model_call(call):
            return False
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr == "forward":
            return True
        receiver = dotted(func.value) or ""
        return receiver in {"self", "cls"} or receiver in self.facts.module_names

    def tainted(self, expr: ast.AST | None, state: TaintState) -> bool:
        if expr is None or state.grad_off:
            return False
        return self._tainted(expr, state)

    def _tainted(self, expr: ast.AST, state: TaintState) -> bool:
        kind = type(expr)
        if kind is ast.Name:
            name = expr.id
            names = state.names
            return name in names or state.resolve(name) in names
        if kind is ast.Attribute:
            if expr.attr in CLEAN_ATTRIBUTES:
                return False
            name = dotted(expr)
            if name and (name in state.names or state.resolve(name) in state.names):
                return True
            if expr.attr in _PARAMETER_ATTRIBUTES and (dotted(expr.value) or "") in self.facts.module_names:
                return True  # a parameter
            return self._tainted(expr.value, state)
        if kind is ast.Call:
            return self._call_tainted(expr, state)
        if kind in _NEVER_TAINTED:
            return False
        if kind is ast.IfExp:
            return self._tainted(expr.body, state) or self._tainted(expr.orelse, state)
        for name in CHILD_FIELDS.get(type(expr), ()):
            value = getattr(expr, name, None)
            if type(value) is list:
                for child in value:
                    if isinstance(child, ast.expr) and self._tainted(child, state):
                        return True
            elif isinstance(value, ast.expr) and self._tainted(value, state):
                return True
        return False

    def _by_name(self, call: ast.Call) -> bool | None:
        """What the callee's name alone says (clean helper, parameters), memoised per call; None: look further."""
        key = id(call)
        if key in self._name_verdicts:
            return self._name_verdicts[key]
        func = call.func
        name = call_name(call)
        is_method = type(func) is ast.Attribute
        short = func.attr if is_method else last_name(name)
        verdict: bool | None = None
        if is_method and short in CLEAN_METHODS:
            verdict = False
        elif (not is_method or "." in name) and short in CLEAN_FUNCTIONS and not (is_method and short == "float"):
            verdict = False
        elif name.startswith(CLEAN_MODULE_PREFIXES) or is_summary_name(short) or "tokenizer" in name.lower():
            verdict = False  # summaries and decoded text are Python objects, not tensors
        elif short in PARAMETER_METHODS:
            verdict = True
        self._name_verdicts[key] = verdict
        return verdict

    def _call_tainted(self, call: ast.Call, state: TaintState) -> bool:
        verdict = self._by_name(call)
        if verdict is not None:
            return verdict
        func = call.func
        short = func.attr if type(func) is ast.Attribute else ""
        if self.is_model_call(call):
            return True
        local = self.returns_graph(call, state)
        if local is not None:
            return local  # a function of this file, walked with these arguments
        if short and self._tainted(func.value, state):
            return True
        if short and (short in LIKE_METHODS or short.startswith("new_")):
            return False  # ``consts.type_as(hidden)``: only dtype and device come from the argument
        return any(self._tainted(arg, state) for arg in call.args) or any(
            self._tainted(kw.value, state) for kw in call.keywords
        )
