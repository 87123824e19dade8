"""host-tensor-to-device: a constant tensor built on the CPU, then copied to the GPU, again and again."""

from __future__ import annotations

import ast

from ...findings import Code, Fix
from ...parse.edits import replace_node
from ...parse.paths import is_test_support
from ...parse.syntax import call_name, dotted, iter_nodes, last_name
from ...walker.rule import Rule
from ...walker.context import LintContext

RULE = "host-tensor-to-device"
CODES = (
    Code(
        "VL501", RULE, "warning",
        "a constant tensor is built on the CPU and copied to the GPU repeatedly",
        finds=(
            "a constant tensor built on the CPU then moved (`.cuda()`, `.to(dev)`) in a hot loop, a module's "
            "`forward`, or a function called on every step (a loss helper); legacy constructors given a shape "
            "(`torch.FloatTensor(n, m).fill_(0)`) and constant comprehensions count, data made per iteration "
            "(`torch.tensor(labels)`, `torch.Tensor([[word_idx]])`) does not, nor does test support code (a test "
            "file, a module of a `tests`, `testing` or `test_utils` folder), which runs in tests, not in training "
            "or serving"
        ),
        fix=(
            "`device=` at creation; none for a random factory (the device's generator draws other numbers) nor "
            "beside a keyword other than the dtype and the shape's (`pin_memory=`, `requires_grad=`, `out=`)"
        ),
        why=(
            "Each step builds the tensor on the host and copies it to the GPU (an allocation on each side and a "
            "transfer); made with `device=` it is built on the GPU directly."
        ),
        example=(
            "for x in loader:\n"
            "    mask = torch.ones(8, 8).cuda()\n"
            "    out = model(x.cuda()) * mask"
        ),
    ),
)


# Factories that take ``device=``; the first group is constant whatever its arguments.
_SHAPED = {"zeros", "ones", "full", "eye", "arange", "linspace", "logspace", "empty", "rand", "randn", "randint"}
_FROM_DATA = {"tensor", "as_tensor", "Tensor", "FloatTensor", "LongTensor", "IntTensor", "BoolTensor", "HalfTensor"}
_TAKES_DEVICE = _SHAPED | {"tensor", "as_tensor"}
# ``device=`` at creation is the same tensor as the copy only when nothing else about it depends on where it is
# made: random factories draw from the device's generator instead of the CPU's (a seeded run gets other numbers),
# and ``pin_memory=``, ``out=``, ``generator=`` or ``requires_grad=`` (a leaf on the device, where the copy was
# not one) raise or change what the code gets. Keywords other than these neutral ones get no fix.
_RANDOM = {"rand", "randn", "randint"}
_NEUTRAL_KEYWORDS = frozenset({"dtype", "size", "fill_value", "start", "end", "step", "steps", "base", "low", "high"})
_TORCH_DTYPES = ("float", "half", "bfloat16", "double", "int", "long", "bool", "uint8", "complex")


_SHAPE_METHODS = {"float", "long", "int", "half", "double", "bool", "view", "reshape", "unsqueeze", "expand", "t", "repeat", "flatten", "permute", "transpose", "contiguous"}
_COMBINERS = {"meshgrid", "stack", "cat", "outer", "cartesian_prod"}


def _is_constant(node: ast.AST, varying: frozenset[str], nested: bool = False) -> bool:
    """Literal values and scalar arithmetic; a bare variable (``torch.tensor(labels)``) is data, and so is
    anything made of names the loop binds anew each iteration (``torch.tensor([[word_idx]])``)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_is_constant(elt, varying, True) for elt in node.elts)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        bound = frozenset(n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name))
        return all(_constant_iterable(g.iter, varying) for g in node.generators) and _is_constant(node.elt, varying - bound, True)
    if isinstance(node, ast.UnaryOp):
        return _is_constant(node.operand, varying, nested)
    if isinstance(node, ast.BinOp):
        return _is_constant(node.left, varying, True) and _is_constant(node.right, varying, True)
    if isinstance(node, ast.Name):
        return node.id not in varying and (nested or node.id.isupper())
    if isinstance(node, ast.Attribute):
        return (dotted(node) or "").split(".", 1)[0] not in varying and (nested or (dotted(node) or "").startswith("torch."))
    return False


def _constant_iterable(node: ast.AST, varying: frozenset[str]) -> bool:
    """``range(10)``, a literal list: what a comprehension over it builds is the same every time."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_is_constant(e, varying, True) for e in node.elts)
    return isinstance(node, ast.Call) and call_name(node) == "range" and all(_is_constant(a, varying, True) for a in node.args)


_LEGACY = {"Tensor", "FloatTensor", "LongTensor", "IntTensor", "BoolTensor", "HalfTensor", "DoubleTensor", "ByteTensor"}
_FILLS = {"fill_", "zero_", "normal_", "uniform_", "random_", "bernoulli_", "exponential_"}


def _factory(call: ast.Call, ctx: LintContext, filled: bool = False) -> str | None:
    """The torch factory called by ``call`` when it builds a constant host tensor. ``filled``: the result is
    filled in place right away (``torch.FloatTensor(n, m).fill_(0)``), so its arguments are a shape."""
    name = call_name(call)
    short = last_name(name)
    head = name.split(".", 1)[0]
    is_torch = head in {"torch", ctx.facts.torch_alias} or ctx.facts.imported_names.get(name, "").startswith("torch.")
    if not is_torch or any(kw.arg == "device" for kw in call.keywords):
        return None
    if short in _SHAPED:
        return short
    if short in _LEGACY and call.args and (filled or len(call.args) > 1) and not any(isinstance(a, (ast.List, ast.Tuple)) for a in call.args):
        return short  # ``torch.FloatTensor(n, m)``: a legacy constructor given a shape
    if short in _FROM_DATA and all(_is_constant(a, _varying(ctx)) for a in call.args) and call.args:
        return short
    return None


def _varying(ctx: LintContext) -> frozenset[str]:
    """Names bound anew on each iteration of the innermost loop (data of that iteration)."""
    if not ctx.loops:
        return frozenset()
    loop = ctx.loops[-1]
    key = ("varying", id(loop))
    found = ctx.memo.get(key)
    if found is None:
        names = set(n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)) if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
        for store in ctx.facts.stores_inside(loop):
            targets = store.targets if isinstance(store, ast.Assign) else [getattr(store, "target", None)]
            for target in targets:
                if target is not None:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
        for inner in ctx.facts.loops_inside(ctx.scope.node):
            if isinstance(inner, (ast.For, ast.AsyncFor)) and loop.lineno <= inner.lineno <= (loop.end_lineno or loop.lineno):
                names.update(n.id for n in ast.walk(inner.target) if isinstance(n, ast.Name))
        found = ctx.memo[key] = frozenset(names)
    return found


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
    if isinstance(func, ast.Attribute) and func.attr in _FILLS and isinstance(func.value, ast.Call):
        return _factory(func.value, ctx, filled=True) is not None or _is_host_constant(func.value, ctx, names)
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


def _made_alike_on_the_device(factory: str | None, created: ast.Call) -> bool:
    """Whether ``created`` given ``device=`` makes the tensor its copy was: a deterministic factory that takes it,
    every argument spelled out (no ``*args`` or ``**kwargs``) and only neutral keywords (see ``_RANDOM``)."""
    return (
        factory in _TAKES_DEVICE and factory not in _RANDOM
        and not any(isinstance(a, ast.Starred) for a in created.args)
        and all(kw.arg in _NEUTRAL_KEYWORDS for kw in created.keywords)
    )


class HostTensorToDevice(Rule):
    codes = CODES

    def _runs_every_step(self, ctx: LintContext) -> bool:
        """A module's forward (or a method it runs), an autograd.Function's forward, or a function called
        on every iteration of a training or data loop (a loss helper, a batch builder)."""
        node = ctx.scope.node
        if isinstance(node, ast.Module):
            return False
        graph = ctx.graph
        return (
            ctx.scope.name == "forward"
            or bool(graph.part_of_forward.get(id(node)))
            or bool(graph.in_loop.get(id(node)))
        )


    def check_call(self, call: ast.Call, ctx: LintContext) -> None:
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in {"cuda", "to"} and isinstance(func.value, ast.Call)):
            return
        if is_test_support(ctx.path):
            return  # a copy made in a test's helper costs a test run, not a training or serving step
        in_forward = self._runs_every_step(ctx)
        if ctx.loops:
            if not ctx.is_hot_loop(ctx.loops[-1]):
                return
        elif not in_forward:
            return
        created = func.value
        factory = _factory(created, ctx)
        if factory is None and not _is_host_constant(created, ctx):
            return
        device = _device_argument(call, ctx)
        if func.attr == "to" and device is None and not _may_move(call):
            return  # a dtype conversion, not a move
        where = ("forward call" if ctx.scope.name == "forward" else "call") if in_forward and not ctx.loops else "iteration"
        what = f"torch.{factory}(...)" if factory else f"`{ctx.positions.segment(created)}`"
        message = (
            f"{what} is built in host memory and copied to the GPU on every {where}, an extra "
            "allocation and transfer each time; create it with device=... (or register it once as a buffer)."
        )
        fixes = ()
        if device is not None and _made_alike_on_the_device(factory, created):
            text = ctx.positions.segment(created)
            separator = ", " if created.args or created.keywords else ""
            new_text = f"{text[:-1].rstrip()}{separator}device={device})"
            fixes = (Fix(f"Create it on the device (device={device})", (replace_node(ctx.positions, call, new_text),)),)
        ctx.report("VL501", call, message, fixes)
