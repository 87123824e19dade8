"""Tensors an autograd.Function keeps as attributes of ``ctx`` instead of ``ctx.save_for_backward``.

The node's ``ctx`` lives as long as the graph does. A tensor stored on it as an attribute is never freed
after backward, and when it is the Function's output (or a view of it, or a wrapper that shares its
memory) it closes a reference cycle output -> grad_fn -> ctx -> output that only the cycle collector can
break. Inputs, and the non-tensor values (shapes, flags, options) that belong on ctx, are fine.

Provenance is judged in each function that receives ``ctx``: ``forward`` and ``setup_context`` of a
Function class, and the helpers of this file they pass ``ctx`` to (``_setup_context(ctx, inputs,
outputs)``), whose parameters take the provenance of what the caller passes.
"""

from __future__ import annotations

import ast

from ..parse.syntax import call_name, dotted, flat_elements, is_autograd_function_class, last_name

INPUT, COMPUTED, OUTPUT = "input", "computed", "output"
_RANK = {INPUT: 0, COMPUTED: 1, OUTPUT: 2}
# Tensor methods that return a view (or the tensor itself): the result shares the memory it came from.
_VIEWS = frozenset({
    "view", "reshape", "t", "transpose", "permute", "expand", "squeeze", "unsqueeze", "narrow", "as_strided",
    "detach", "contiguous", "flatten", "unflatten", "view_as", "expand_as", "reshape_as", "chunk", "split",
    "unbind", "select", "diagonal", "movedim", "swapaxes", "mT", "T", "__getitem__", "requires_grad_",
    "normal_", "uniform_", "fill_", "zero_", "copy_", "clamp_", "mul_", "add_", "sub_", "div_",
})
# Calls whose result is not a tensor: what they return never needs save_for_backward.
_NOT_TENSORS = frozenset({"int", "float", "bool", "str", "len", "item", "tolist", "size", "dim", "numel", "copy", "stride"})


def ctx_parameter(func: ast.AST) -> str | None:
    args = [a.arg for a in func.args.posonlyargs + func.args.args]
    return "ctx" if "ctx" in args else None


def function_entry_points(cls: ast.ClassDef) -> list[tuple[ast.AST, dict[str, str], bool]]:
    """(method, parameter provenance, whether its returns are the outputs) of an autograd.Function class."""
    if not is_autograd_function_class(cls):
        return []
    found = []
    for item in cls.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = [a.arg for a in item.args.posonlyargs + item.args.args]
        if item.name == "forward" and params[:1] == ["ctx"]:
            found.append((item, {p: INPUT for p in params[1:]}, True))
        elif item.name == "setup_context" and len(params) >= 3:
            found.append((item, {params[1]: INPUT, params[2]: OUTPUT}, False))
    return found


def provenance(func: ast.AST, seeds: dict[str, str], returns_are_outputs: bool) -> dict[str, str]:
    """Where each tensor name of ``func`` comes from: an input, the output, or computed inside."""
    known: dict[str, str] = dict(seeds)

    def note(name: str, kind: str | None) -> bool:
        if kind is None or _RANK[kind] <= _RANK.get(known.get(name, ""), -1):
            return False
        known[name] = kind
        return True

    assignments = [n for n in ast.walk(func) if isinstance(n, ast.Assign)]
    if returns_are_outputs:
        for node in ast.walk(func):
            if isinstance(node, ast.Return) and node.value is not None:
                for element in flat_elements(node.value):
                    name = dotted(element)
                    if name:
                        note(name, OUTPUT)
    for _ in range(4):
        changed = False
        for assign in assignments:
            kind = _value_kind(assign.value, known)
            for target in assign.targets:
                for element in flat_elements(target):
                    name = dotted(element)
                    if name and not name.startswith("ctx."):
                        changed |= note(name, kind)
            # ``result, _ = outputs; return result``: the container the output came from holds it too.
            source = _view_source(assign.value)
            if source and any(known.get(dotted(e) or "") == OUTPUT for t in assign.targets for e in flat_elements(t)):
                changed |= note(source, OUTPUT)
        if not changed:
            break
    return known


def tensor_kind(value: ast.AST, known: dict[str, str]) -> str | None:
    """The provenance of a value stored on ctx (for a tuple, the strongest of its elements)."""
    best = None
    for element in flat_elements(value):
        kind = _value_kind(element, known)
        if kind is not None and _RANK[kind] > _RANK.get(best or "", -1):
            best = kind
    return best


def _view_source(value: ast.AST) -> str | None:
    """The name ``value`` is a view or an unpacking of, if it is one."""
    if isinstance(value, (ast.Name, ast.Attribute)):
        return dotted(value)
    if isinstance(value, ast.Subscript):
        return dotted(value.value)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _VIEWS:
        return _view_source(value.func.value)
    return None


def _value_kind(value: ast.AST, known: dict[str, str]) -> str | None:
    if isinstance(value, (ast.Name, ast.Attribute)):
        return known.get(dotted(value) or "")
    if isinstance(value, ast.Subscript):
        return _value_kind(value.value, known)
    if isinstance(value, (ast.Tuple, ast.List)):
        return tensor_kind(value, known)
    if isinstance(value, ast.BinOp):
        kinds = [_value_kind(value.left, known), _value_kind(value.right, known)]
        return COMPUTED if any(kinds) else None
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    short = last_name(call_name(value))
    if short in _NOT_TENSORS:
        return None
    if isinstance(func, ast.Attribute):
        receiver = _value_kind(func.value, known)
        if func.attr in _VIEWS:
            return receiver  # a view has the provenance of what it views
        if receiver is not None or func.attr.startswith("new_"):
            return COMPUTED  # a tensor method: a new tensor
        head = (dotted(func) or "").split(".", 1)[0]
        if head in {"torch", "F"}:
            return COMPUTED if any(_value_kind(a, known) for a in value.args) or short in {"zeros", "ones", "empty", "randn", "rand", "matmul", "mm", "bmm", "einsum"} else None
        return None
    if isinstance(func, ast.Name):
        kinds = [k for k in (_value_kind(a, known) for a in value.args) if k]
        if not kinds:
            return None
        # A function of another file called on a tensor: it may wrap the same memory (a zero-copy view).
        return max(kinds, key=_RANK.__getitem__)
    return None


def is_ctx_function_class(cls: ast.ClassDef | None) -> bool:
    return cls is not None and is_autograd_function_class(cls)


__all__ = ["COMPUTED", "INPUT", "OUTPUT", "ctx_parameter", "function_entry_points", "provenance", "tensor_kind"]
