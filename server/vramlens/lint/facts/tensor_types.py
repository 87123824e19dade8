"""What is *proven* to be a tensor: torch's return types as data, constructors, annotations, the file's own
functions. A fix that calls ``.detach()`` on a value needs this proof; a finding never rests on a guess either.

The answer is yes or unknown, never "probably": a name is a tensor when every binding of it in its function is
one; a call is one when its callee is a torch function, a tensor method or a torch.nn layer known to return a
single tensor, or a function of the file annotated ``-> Tensor``. Conditional expressions, collections,
attribute reads of unknown objects (``outputs.loss`` may be None) and anything returned by code this file cannot
see stay unknown.
"""

from __future__ import annotations

import ast

from ..parse.syntax import call_name, dotted, last_name

# torch.* and torch.nn.functional.* functions that return one tensor (functions returning tuples, such as
# ``max(x, dim)``, ``sort``, ``split``, ``svd``, are left out on purpose).
TENSOR_FUNCTIONS = frozenset({
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "matmul", "mm", "bmm", "einsum", "softmax",
    "log_softmax", "sigmoid", "tanh", "relu", "gelu", "silu", "exp", "log", "log1p", "sqrt", "rsqrt", "abs",
    "sum", "mean", "clamp", "clip", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange",
    "linspace", "tensor", "as_tensor", "from_numpy", "zeros_like", "ones_like", "empty_like", "full_like",
    "rand_like", "randn_like", "flatten", "reshape", "transpose", "permute", "squeeze", "unsqueeze", "mul", "add",
    "sub", "div", "pow", "norm", "cdist", "outer", "gather", "index_select", "masked_fill", "bernoulli", "dropout",
    "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "leaky_relu", "elu", "softplus",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity", "normalize", "layer_norm", "batch_norm",
    "group_norm", "embedding", "pad", "interpolate", "one_hot", "scaled_dot_product_attention", "avg_pool1d",
    "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "logsumexp", "cumsum", "prod", "square", "neg",
    "minimum", "maximum", "tril", "triu", "diag", "roll", "flip", "repeat_interleave", "baddbmm", "addmm",
    "triplet_margin_loss", "margin_ranking_loss", "cosine_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss",
})
# Tensor methods that return one tensor. ``max``/``min``/``median`` only without arguments (with a dim: a tuple).
TENSOR_METHODS = frozenset({
    "mean", "sum", "clone", "detach", "contiguous", "view", "reshape", "flatten", "squeeze", "unsqueeze", "permute",
    "transpose", "t", "float", "double", "half", "bfloat16", "to", "cuda", "cpu", "abs", "exp", "log", "sqrt",
    "pow", "mul", "add", "sub", "div", "matmul", "softmax", "log_softmax", "sigmoid", "tanh", "relu", "clamp",
    "masked_fill", "expand", "expand_as", "repeat", "gather", "norm", "std", "var", "prod", "cumsum", "neg",
    "type_as", "view_as", "reshape_as", "mm", "bmm", "square", "sign", "round", "floor", "ceil", "logsumexp",
    "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "index_select", "masked_select", "narrow",
    "unsqueeze_", "squeeze_", "mul_", "add_", "sub_", "div_", "clamp_", "fill_", "zero_", "requires_grad_",
    "flip", "roll", "tril", "triu", "diag", "square_", "exp_", "log_", "sqrt_", "repeat_interleave", "amax", "amin",
})
_NO_ARGUMENT_METHODS = frozenset({"max", "min", "median", "argmax", "argmin"})
# Scalar reductions: ``.item()`` is safe on their result.
SCALAR_METHODS = frozenset({"mean", "sum", "norm", "std", "var", "prod", "max", "min", "amax", "amin"})
# torch.nn layers whose forward returns something other than one tensor (or the input as it came).
NOT_TENSOR_LAYERS = frozenset({
    "LSTM", "GRU", "RNN", "LSTMCell", "MultiheadAttention", "AdaptiveLogSoftmaxWithLoss", "Sequential", "ModuleList",
    "ModuleDict", "Identity", "Module", "DataParallel", "DistributedDataParallel", "ParameterList", "ParameterDict",
})
_MODULE_BINDINGS: dict[int, tuple] = {}  # id(tree) -> (tree, its module-level bindings), the last few files
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.MatMult, ast.FloorDiv, ast.Mod)
_DEPTH = 8


class TensorTypes:
    """Answers "is this expression proven to be a tensor here?" for one function of one file."""

    def __init__(self, facts, evidence, scope: ast.AST, cls: ast.ClassDef | None) -> None:
        self.facts = facts
        self.evidence = evidence
        self.scope = scope
        self.cls = cls
        self._bindings: dict[str, list[ast.AST]] | None = None

    # -- expressions ------------------------------------------------------------------------
    def is_tensor(self, expr: ast.AST, depth: int = 0, seen: frozenset[str] = frozenset()) -> bool:
        if depth > _DEPTH:
            return False
        kind = type(expr)
        if kind is ast.Name:
            return self._name_is_tensor(expr.id, depth, seen)
        if kind is ast.Call:
            return self._call_is_tensor(expr, depth, seen)
        if kind is ast.BinOp:
            if not isinstance(expr.op, _ARITHMETIC):
                return False
            left, right = (self.is_tensor(side, depth + 1, seen) for side in (expr.left, expr.right))
            return (left and (right or _is_number(expr.right))) or (right and _is_number(expr.left))
        if kind is ast.UnaryOp:
            return isinstance(expr.op, (ast.USub, ast.UAdd)) and self.is_tensor(expr.operand, depth + 1, seen)
        if kind is ast.Subscript:
            # Indexing a tensor gives a tensor; a string key means a dict-like object, not a tensor.
            index = expr.slice
            if isinstance(index, ast.Constant) and isinstance(index.value, str):
                return False
            return self.is_tensor(expr.value, depth + 1, seen)
        if kind is ast.Attribute:
            return expr.attr in {"T", "mT", "data", "real", "imag"} and self.is_tensor(expr.value, depth + 1, seen)
        return False  # IfExp, BoolOp, collections, constants, unknown attributes: not proven

    def is_scalar_tensor(self, expr: ast.AST, depth: int = 0) -> bool:
        """A 0-d tensor: a full reduction (``.mean()``), or a torch loss with its default reduction."""
        if depth > _DEPTH:
            return False
        if isinstance(expr, ast.Name):
            values = self._values_of(expr.id)
            return bool(values) and all(v is not None and self.is_scalar_tensor(v, depth + 1) for v in values)
        if not isinstance(expr, ast.Call) or not self.is_tensor(expr, depth):
            return False
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in SCALAR_METHODS and not expr.args and not expr.keywords:
            return True
        if self._layer_returns_tensor(func, loss_only=True):
            return True
        short = last_name(call_name(expr))
        return short.endswith("_loss") and self._is_torch_function(expr) and not any(k.arg == "reduction" for k in expr.keywords)

    # -- names ------------------------------------------------------------------------------
    def _name_is_tensor(self, name: str, depth: int, seen: frozenset[str]) -> bool:
        if name in seen:
            return True  # ``x = x * 2``: judged by its other bindings
        values = self._values_of(name)
        if not values:
            return False
        inner = seen | {name}
        return all(value is not None and self.is_tensor(value, depth + 1, inner) for value in values)

    def _values_of(self, name: str) -> list[ast.AST | None]:
        """Every value ``name`` is bound to in the function (None for a binding whose value is not known:
        a loop target, an unpacked tuple, ``with ... as``, an unannotated parameter)."""
        if self._bindings is None:
            self._bindings = _bindings(self.scope)
        found = self._bindings.get(name)
        if found is None and self.scope is not self.facts.tree and name in self.facts.globals and self.facts.tree is not None:
            found = self._module_bindings().get(name)  # a module global read in the function
        return found or []

    def _module_bindings(self) -> dict[str, list[ast.AST | None]]:
        key = id(self.facts.tree)
        cached = _MODULE_BINDINGS.get(key)
        if cached is None or cached[0] is not self.facts.tree:
            cached = _MODULE_BINDINGS[key] = (self.facts.tree, _bindings(self.facts.tree))
            if len(_MODULE_BINDINGS) > 8:
                _MODULE_BINDINGS.pop(next(iter(_MODULE_BINDINGS)))
        return cached[1]

    # -- calls ------------------------------------------------------------------------------
    def _call_is_tensor(self, call: ast.Call, depth: int, seen: frozenset[str]) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute):
            method = func.attr
            if (method in TENSOR_METHODS or (method in _NO_ARGUMENT_METHODS and not call.args and not call.keywords)) \
                    and self.is_tensor(func.value, depth + 1, seen):
                return True
        if self._is_torch_function(call):
            short = last_name(call_name(call))
            return short in TENSOR_FUNCTIONS and not any(k.arg in {"return_indices", "as_tuple"} for k in call.keywords)
        if self._layer_returns_tensor(func):
            return True
        return self._annotated_tensor_function(call)

    def _is_torch_function(self, call: ast.Call) -> bool:
        name = call_name(call)
        if not name or "." not in name:
            imported = self.facts.imports.get(name or "", "")
            return imported.startswith("torch.")
        head, _, rest = name.partition(".")
        origin = self.facts.imports.get(head, head if head == "torch" else "")
        if head == self.facts.torch_alias:
            origin = "torch"
        if not origin.startswith("torch"):
            return False
        qualified = f"{origin}.{rest}"
        module = qualified.rsplit(".", 1)[0]
        return module in {"torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft"}

    def _layer_returns_tensor(self, func: ast.AST, loss_only: bool = False) -> bool:
        """``self.proj(x)`` where ``self.proj = nn.Linear(...)``; ``criterion(out, y)`` with ``criterion = nn.MSELoss()``."""
        name = dotted(func)
        if not name:
            return False
        if name.startswith("self.") and name.count(".") == 1 and self.cls is not None:
            values = [v for method in self.cls.body if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
                      for v in _bindings(method).get(name, [])]
        elif "." not in name:
            values = self._values_of(name)
        else:
            return False
        if not values or any(v is None or not isinstance(v, ast.Call) for v in values):
            return False
        for value in values:
            layer = self.evidence.torch_nn_class(call_name(value))
            if loss_only and (layer is None or not layer.endswith("Loss") or any(k.arg == "reduction" for k in value.keywords)):
                return False
            if layer is None or layer in NOT_TENSOR_LAYERS or layer.endswith(("Pool1d", "Pool2d", "Pool3d")) and any(
                    k.arg == "return_indices" for k in value.keywords):
                return False
        return True

    def _annotated_tensor_function(self, call: ast.Call) -> bool:
        """A function of this file whose return annotation is ``Tensor``."""
        name = dotted(call.func)
        func = None
        if name and "." not in name:
            func = self.facts.functions.get(name)
        elif name and name.startswith("self.") and name.count(".") == 1 and self.cls is not None:
            func = self.facts.methods.get((self.cls.name, name[5:]))
        return func is not None and is_tensor_annotation(func.returns)


def is_tensor_annotation(annotation: ast.AST | None) -> bool:
    """``torch.Tensor``, ``Tensor``, ``th.Tensor``, ``"torch.Tensor"`` (not Optional, not a union)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        text = annotation.value.strip()
        return text in {"Tensor", "torch.Tensor"}
    name = dotted(annotation) if annotation is not None else None
    return bool(name) and last_name(name) in {"Tensor", "FloatTensor", "LongTensor"} and name.count(".") <= 1


def _is_number(expr: ast.AST) -> bool:
    if isinstance(expr, ast.UnaryOp):
        return _is_number(expr.operand)
    return isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)


def _bindings(scope: ast.AST) -> dict[str, list[ast.AST | None]]:
    """name -> the values it is bound to in ``scope`` (nested definitions excluded)."""
    found: dict[str, list[ast.AST | None]] = {}
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = scope.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            # An annotated tensor parameter is as good as a binding to a tensor; any other parameter is unknown.
            found.setdefault(arg.arg, []).append(_TENSOR_MARK if is_tensor_annotation(arg.annotation) else None)
        for arg in (args.vararg, args.kwarg):
            if arg is not None:
                found.setdefault(arg.arg, []).append(None)
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            if not isinstance(node, ast.Lambda):
                found.setdefault(node.name, []).append(None)
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _bind_target(found, target, node.value)
        elif isinstance(node, ast.AnnAssign):
            value = _TENSOR_MARK if is_tensor_annotation(node.annotation) else node.value
            _bind_target(found, node.target, value)
        elif isinstance(node, ast.AugAssign):
            _bind_target(found, node.target, ast.BinOp(left=node.target, op=node.op, right=node.value))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.setdefault(node.id, []).append(None)  # a loop target, ``with ... as``, a walrus, ``del``
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            pass  # attribute stores are read through _bind_target of their statement
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            todo.extend(n for n in ast.iter_child_nodes(node) if n not in _targets(node))
            continue
        todo.extend(ast.iter_child_nodes(node))
    return found


def _targets(node: ast.stmt) -> list[ast.AST]:
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


def _bind_target(found: dict, target: ast.AST, value: ast.AST | None) -> None:
    if isinstance(target, (ast.Name, ast.Attribute)):
        name = dotted(target)
        if name:
            found.setdefault(name, []).append(value)
        return
    if isinstance(target, (ast.Tuple, ast.List)):
        values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) else None
        for index, element in enumerate(target.elts):
            _bind_target(found, element, values[index] if values is not None else None)
        return
    if isinstance(target, ast.Starred):
        _bind_target(found, target.value, None)
    # a subscript store changes an element, not the name's type


# A binding proven to be a tensor by its annotation: a call of ``torch.empty`` stands for it.
_TENSOR_MARK = ast.Call(func=ast.Attribute(value=ast.Name(id="torch", ctx=ast.Load()), attr="empty", ctx=ast.Load()),
                        args=[], keywords=[])
