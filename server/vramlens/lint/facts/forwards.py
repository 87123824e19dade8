"""What calling something does, judged from the module evidence of evidence.py: run a module's forward
(recording a graph when grad is on), run a parameter-free or frozen module (which only extends what it is
given), run without grad itself (a pipeline, ``generate``), or something else."""

from __future__ import annotations

import ast

from ..parse.syntax import call_name, dotted, name_words
from .evidence import Evidence
from .library import NO_GRAD_METHODS

FORWARD, METHOD, FUNCTIONAL, NO_GRAD, DIFFERENTIABLE = "forward", "method", "functional", "no-grad", "differentiable"
# Words of a module's method names that run (part of) its network on an input.
_FORWARD_METHOD_WORDS = frozenset({
    "encode", "decode", "embed", "features", "predict", "infer", "inference", "sample", "extract", "score",
    "logits", "project", "forward", "encoder", "decoder", "head", "classify", "detect", "segment", "denoise",
})
# Methods of a module that manage it rather than run it.
MODULE_MANAGEMENT = frozenset({
    "eval", "train", "to", "cuda", "cpu", "state_dict", "load_state_dict", "parameters", "named_parameters", "zero_grad",
    "apply", "modules", "children", "named_modules", "named_children", "half", "float", "double", "bfloat16",
    "requires_grad_", "register_buffer", "register_forward_hook", "register_full_backward_hook", "buffers",
    "register_parameter", "add_module", "save_pretrained", "get_submodule", "extra_repr", "type", "named_buffers",
    "register_forward_pre_hook", "get_parameter", "get_buffer", "to_empty", "share_memory", "compile", "fuse",
    "push_to_hub", "num_parameters", "print_trainable_parameters", "merge_and_unload", "unload", "tie_weights",
    "float16", "freeze", "unfreeze", "summary", "info", "profile", "export", "save", "load", "fuse_model",
    "gradient_checkpointing_enable", "gradient_checkpointing_disable", "enable_xformers_memory_efficient_attention",
    "set_attn_processor", "set_default_attn_processor", "enable_gradient_checkpointing", "requires_grad",
    "append", "extend", "insert", "pop", "keys", "values", "items", "update", "get", "__len__", "index", "count",
})
_NOT_A_FORWARD_PREFIXES = (
    "build_", "create_", "make_", "get_", "load_", "init_", "set_", "save_", "log_", "register_", "new_", "can_",
    "has_", "is_", "adjust_", "tie_", "post_", "resize_", "enable_", "disable_", "print_", "num_", "reset_",
    "prepare_", "_init", "_set", "_get", "_load", "_save", "_build",
)
# Model methods that switch recording off themselves (documented in library.py).


def _enclosing_class_is_module(evidence: Evidence, scope: ast.AST) -> bool:
    cls = evidence.facts.enclosing_class(scope)
    return cls is not None and cls.name in evidence.module_classes


def forward_kind(evidence: Evidence, call: ast.Call, scope: ast.AST) -> str | None:
    """Memoised per (call, scope) on the evidence; see ``_forward_kind``."""
    key = (id(call), id(scope))
    memo = evidence.forward_kinds
    if key in memo:
        return memo[key]
    kind = memo[key] = _forward_kind(evidence, call, scope)
    return kind


def _forward_kind(evidence: Evidence, call: ast.Call, scope: ast.AST) -> str | None:
    """What calling ``call.func`` does: FORWARD (runs a module with parameters, recording a graph when grad
    is on), FUNCTIONAL (a parameter-free or frozen module: the result carries what its inputs carry),
    NO_GRAD (a callable that runs under no_grad itself), or None (not a module, or not known to be one)."""
    func = call.func
    kind = type(func)
    if kind is ast.Call:  # ``Net()(x)``, ``nn.Linear(2, 2)(x)``
        if evidence.is_module(func, scope):
            return FUNCTIONAL if evidence.records_nothing(func, scope) else FORWARD
        return None
    if kind is ast.Subscript:  # ``self.layers[i](x)``
        if not evidence.is_module(func.value, scope):
            return None
        container = dotted(func.value)
        return FUNCTIONAL if container and (evidence.is_functional(container, scope) or evidence.is_frozen(container)) else FORWARD
    if kind is ast.Attribute and isinstance(func.value, ast.Call) and call_name(func.value) == "super":
        return FORWARD if func.attr == "forward" and _enclosing_class_is_module(evidence, scope) else None
    name = dotted(func)
    if not name:
        return None
    if name in {"self", "self.forward"} and _enclosing_class_is_module(evidence, scope):
        return FORWARD  # ``self(x)`` runs this module's own forward
    if kind is ast.Name:
        if evidence.is_no_grad_callable_name(name, scope):
            return NO_GRAD
        if evidence.is_module_name(name, scope):
            if evidence.is_functional(name, scope) or evidence.is_frozen(name):
                return FUNCTIONAL
            return FORWARD
        return DIFFERENTIABLE if evidence.is_differentiable_name(name, scope) else None
    receiver, method = name.rsplit(".", 1)
    if evidence.is_module_name(name, scope):  # ``self.encoder(x)``, ``model.module(x)``
        if evidence.is_functional(name, scope) or evidence.is_frozen(name):
            return FUNCTIONAL
        return FORWARD
    if evidence.is_no_grad_callable_name(receiver, scope):
        return NO_GRAD
    if evidence.is_differentiable_name(name, scope):
        return DIFFERENTIABLE
    if not evidence.is_module_name(receiver, scope):
        return None
    if method in NO_GRAD_METHODS:
        return NO_GRAD
    if method in MODULE_MANAGEMENT or method.lstrip("_").startswith(_NOT_A_FORWARD_PREFIXES) or method.startswith("__"):
        return None
    if evidence.is_frozen(receiver) or evidence.is_functional(receiver, scope):
        return FUNCTIONAL
    if method in _abstract_methods(evidence):
        return None  # only subclasses this file cannot see implement it: what it does is unknown
    if set(name_words(method)) & _FORWARD_METHOD_WORDS:
        return FORWARD  # ``model.encode(x)``, ``self.backbone.forward_features(x)``
    return METHOD  # some other method of a module: may run part of it (``model.initial_state(n)`` does not)


def _abstract_methods(evidence: Evidence) -> frozenset[str]:
    """Names of methods that every class of the file defining them leaves to subclasses (the body only raises
    ``NotImplementedError``), computed once per file."""
    found = evidence.abstract_methods
    if found is None:
        abstract, concrete = set(), set()
        for (_, name), method in evidence.facts.methods.items():
            (abstract if _raises_not_implemented(method) else concrete).add(name)
        found = evidence.abstract_methods = frozenset(abstract - concrete)
    return found


def _raises_not_implemented(method: ast.AST) -> bool:
    body = [s for s in method.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]  # docstring
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc
    return (dotted(exc.func) if isinstance(exc, ast.Call) else dotted(exc)) == "NotImplementedError"
