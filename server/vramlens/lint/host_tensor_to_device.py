"""host-tensor-to-device: a constant tensor built on the CPU, then copied to the GPU, again and again."""

from __future__ import annotations

import ast

from .edits import replace_node
from .findings import Fix
from .syntax import call_name, dotted, iter_nodes, last_name
from .walker import LintContext

# Factories that take ``device=``; the first group is constant whatever its arguments.
_SHAPED = {"zeros", "ones", "full", "eye", "arange", "linspace", "logspace", "empty", "rand", "randn", "randint"}
_FROM_DATA = {"tensor", "as_tensor", "Tensor", "FloatTensor", "LongTensor", "IntTensor", "BoolTensor", "HalfTensor"}
_TAKES_DEVICE = _SHAPED | {"tensor", "as_tensor"}
_TORCH_DTYPES = ("float", "half", "bfloat16", "double", "int", "long", "bool", "uint8", "complex")


_SHAPE_METHODS = {"float", "long", "int", "half", "double", "bool", "view", "reshape", "unsqueeze", "expand", "t", "repeat", "flatten", "permute", "transpose", "contiguous"}
_COMBINERS = {"meshgrid", "stack", "cat", "outer", "cartesian_prod"}


def _is_constant(node: ast.AST, nested: bool = False) -> bool:
    """Literal values and scalar arithmetic; a bare variable (``torch.tensor(labels)``) is data."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_is_constant(elt, True) for elt in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _is_constant(node.operand, nested)
    if isinstance(node, ast.BinOp):
        return _is_constant(node.left, True) and _is_constant(node.right, True)
    if isinstance(node, ast.Name):
        return nested or node.id.isupper()
    return isinstance(node, ast.Attribute) and (nested or (dotted(node) or "").startswith("torch."))


def _factory(call: ast.Call, ctx: LintContext) -> str | None:
    """The torch factory called by ``call`` when it builds a constant host tensor."""
    name = call_name(call)
    short = last_name(name)
    head = name.split(".", 1)[0]
    is_torch = head in {"torch", ctx.facts.torch_alias} or ctx.facts.imported_names.get(name, "").startswith("torch.")
    if not is_torch or any(kw.arg == "device" for kw in call.keywords):
        return None
    if short in _SHAPED:
        return short
    if short in _FROM_DATA and all(_is_constant(a) for a in call.args) and call.args:
        return short
    return None


def _device_argument(move: ast.Call, ctx: LintContext) -> str | None:
    """The device a ``.cuda()`` / ``.to(dev)`` call moves to, when it is only a device."""
    if move.func.attr == "cuda":
        return '"cuda"' if not move.args and not move.keywords else None
    if len(move.args) == 1 and not move.keywords:
        arg = move.args[0]
        text = ctx.positions.segment(arg)
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return text
        if isinstance(arg, ast.Call) and last_name(call_name(arg)) == "device":
            return text
        if "dev" in last_name(dotted(arg) or "").lower():
            return text  # ``device``, ``x.device``, ``self.dev``
        return None
    if not move.args and len(move.keywords) == 1 and move.keywords[0].arg == "device":
        return ctx.positions.segment(move.keywords[0].value)
    return None


def _host_names(ctx: LintContext) -> set[str]:
    """Names the current scope binds to host tensors built from constants (``fy, fx = meshgrid(arange...)``)."""
    key = ("host-names", id(ctx.scope.node))
    names = ctx.memo.get(key)
    if names is None:
        names = ctx.memo[key] = set()
        for node in ctx.facts.stores_inside(ctx.scope.node):
            if isinstance(node, ast.Assign) and _is_host_constant(node.value, ctx, names):
                for target in node.targets:
                    names.update(sub.id for sub in iter_nodes(target) if isinstance(sub, ast.Name))
    return names


def _is_host_constant(node: ast.AST, ctx: LintContext, names: set[str] | None = None) -> bool:
    names = _host_names(ctx) if names is None else names
    if isinstance(node, ast.Name):
        return node.id in names
    if not isinstance(node, ast.Call):
        return False
    if _factory(node, ctx) is not None:
        return True
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in _SHAPE_METHODS:
        return _is_host_constant(func.value, ctx, names)
    if last_name(call_name(node)) in _COMBINERS and node.args:
        parts = node.args[0].elts if isinstance(node.args[0], (ast.List, ast.Tuple)) and len(node.args) == 1 else node.args
        return all(_is_host_constant(part, ctx, names) for part in parts)
    return False


def _may_move(move: ast.Call) -> bool:
    """``.to(other_tensor)`` moves too; ``.to(torch.float16)`` or ``.to(dtype)`` does not."""
    if not move.args:
        return any(kw.arg == "device" for kw in move.keywords)
    name = (dotted(move.args[0]) or "").lower()
    return bool(name) and not last_name(name).startswith(_TORCH_DTYPES) and "dtype" not in name


class HostTensorToDevice:


    def check_call(self, call: ast.Call, ctx: LintContext) -> None:
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in {"cuda", "to"} and isinstance(func.value, ast.Call)):
            return
        in_forward = ctx.scope.name == "forward"
        if not ctx.loops and not in_forward:
            return
        created = func.value
        factory = _factory(created, ctx)
        if factory is None and not _is_host_constant(created, ctx):
            return
        device = _device_argument(call, ctx)
        if func.attr == "to" and device is None and not _may_move(call):
            return  # a dtype conversion, not a move
        where = "forward call" if in_forward and not ctx.loops else "iteration"
        what = f"torch.{factory}(...)" if factory else f"`{ctx.positions.segment(created)}`"
        message = (
            f"{what} is built in host memory and copied to the GPU on every {where}, an extra "
            "allocation and transfer each time; create it with device=... (or register it once as a buffer)."
        )
        fixes = ()
        if factory in _TAKES_DEVICE and device is not None and not any(isinstance(a, ast.Starred) for a in created.args) and not any(
            kw.arg is None for kw in created.keywords
        ):
            text = ctx.positions.segment(created)
            separator = ", " if created.args or created.keywords else ""
            new_text = f"{text[:-1].rstrip()}{separator}device={device})"
            fixes = (Fix(f"Create it on the device (device={device})", (replace_node(ctx.positions, call, new_text),)),)
        ctx.report("VL501", call, message, fixes)
