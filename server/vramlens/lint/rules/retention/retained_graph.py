"""retained-graph: a value that may carry autograd history is kept somewhere that outlives it.

Every kept tensor pins its whole graph: the activations saved for backward and, through
grad_fn, every earlier step that is still reachable.
"""

from __future__ import annotations

import ast

from ...facts.containers import ARITY, fixed_slots, is_known_list, list_method_call
from ...facts.fix_safety import backpropagated_here, needs_graph_later
from ...facts.forwards import DIFFERENTIABLE, FORWARD, METHOD
from ...facts.function_ctx import OUTPUT, tensor_kind
from ...facts.library import NO_GRAD_UPDATE_PACKAGES
from ...facts.tensor_types import TensorTypes
from ...findings import Code, Fix
from ...flow.summaries import MAYBE_GRAPH, Effect
from ...flow.taint import is_sequence
from ...parse.edits import detach_edits
from ...parse.syntax import assigned_names, base_dotted, call_name, dotted, last_name
from ...walker.rule import Rule
from ...walker.context import LintContext
from ...walker.walker import sanitized
from .framework_hooks import check_kept_output
from .freed_by_backward import freed_by_the_steps_backward
from .lifetime import OUTLIVES_CALL, backpropagated, carried_across, lifetime, names_reaching_return, rebound_in, returned_names
from .object_state import is_fresh, memo_cache_with_clear, reinitialised_per_call, result_left_in_a_handed_in_object

RULE = "retained-graph"
CODES = (
    Code(
        "VL101", RULE, "warning",
        "a graph-carrying value is added to an accumulator (+=)",
        finds=(
            "`acc += loss`, `acc = acc + loss`, `ema = a * loss + (1 - a) * ema`, in place `avg.add_(rate * (loss "
            "- avg))` / `ema.mul_(d).add_(loss)`, `totals[k] += loss` into an accumulator that outlives the "
            "iteration or the call; also `meter.update(loss)` when `update` (in the file) adds its argument to "
            "`self.sum`, and `meter.update(loss)` / `meter.update([a, b])` on a meter of a class defined elsewhere "
            "that outlives the iteration or the call — not one handed in as a parameter, nor a metric of "
            "torchmetrics or ignite, which update without recording a graph (keyword-style "
            "`logger.update(loss=loss)` is left alone: such loggers commonly take `.item()` themselves; "
            "`d.update({\"k\": loss})` on such a dict is VL103)"
        ),
        fix="`loss.detach()`; `.item()` offered second for scalars",
        why=(
            "`total += loss` links each iteration's graph to the ones before it: the activations saved for every "
            "step stay allocated until the accumulator dies, and memory grows with the number of steps."
        ),
        example=(
            "total = 0\n"
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    total += loss"
        ),
    ),
    Code(
        "VL102", RULE, "warning",
        "a graph-carrying value is appended to a long-lived container",
        finds=(
            "`.append/.extend/.insert/...` of a graph-carrying value into a container that outlives the iteration "
            "or the call (followed through aliases such as `buf = self.history`, and into functions of the file "
            "that append their argument to `self`, like a callback or an image pool's `push_and_pop`); what goes "
            "into a container a backward of the loop reads (`losses.append(f(x)); losses[-1].backward()`, "
            "`losses[i], costs[i] = step(); ... losses[i - 1].backward()`) carries graph whatever computed it, and "
            "the older elements keep theirs; not a local list whose elements are detached wherever the loop "
            "backpropagates them (`if with_backward: loss.backward(); loss = loss.detach()`) and that the function "
            "sums or stacks into what it returns: there the graphs are the loss the caller differentiates; when "
            "what is kept is a dict made of such values (`metrics[\"nll\"] = nll.cpu().mean()`, then "
            "`history.append(metrics)`, in this function or one of the file it calls), each is reported where it "
            "went into the dict, the line to change, unless a backward reads that dict (a training step's returned "
            "log)"
        ),
        fix="`.detach()` on the stored value",
        why=(
            "The container keeps each stored tensor and, through its `grad_fn`, the whole graph of the step that "
            "made it, for as long as the container lives: kept before that step's backward, with every saved "
            "activation; kept after it (as here), a graph the backward emptied, whose nodes still fill host memory "
            "every step (354 KiB a step for a 12-layer encoder: benchmarks/graph_after_backward.py)."
        ),
        example=(
            "losses = []\n"
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    losses.append(loss)"
        ),
    ),
    Code(
        "VL103", RULE, "warning",
        "a graph-carrying value is stored under a key of a long-lived container",
        finds=(
            "`d[k] = out` into such a container, directly or through a function of the file (`cache[key] = "
            "value.clone()`); a constant key (`d[\"last\"]`) or a key fixed for the function (a hook made for one "
            "layer) overwrites one slot and is not reported, nor is a module forward's per-block slot of a list "
            "of fixed length on `self` (`self.cache = [torch.empty(0) for _ in range(n)]`, then `self.cache[i] = h`, "
            "the list grown nowhere: each call overwrites the last one's state; filled across a loop's steps, "
            "`losses = [None] * steps` is reported); a dict of such values is reported where they went "
            "into it, as for VL102"
        ),
        fix="`.detach()`",
        why=(
            "A key of a long-lived dict keeps its value's graph alive as a list element does; a new key per step "
            "keeps one graph per step."
        ),
        example=(
            "model = nn.Linear(4, 4)\n"
            "outputs = {}\n"
            "for step, (x, y) in enumerate(loader):\n"
            "    loss = (model(x) - y).pow(2).mean()\n"
            "    loss.backward()\n"
            "    outputs[step] = loss"
        ),
    ),
    Code(
        "VL104", RULE, "warning",
        "a graph-carrying value is concatenated onto an accumulator tensor",
        finds="`acc = torch.cat((acc, out))` growing across iterations",
        fix="`.detach()` on the new part",
        why=(
            "Each `torch.cat` makes a new accumulator whose graph reaches every earlier part's: all the "
            "iterations' graphs stay allocated, and each step copies everything concatenated so far."
        ),
        example=(
            "model = nn.Linear(4, 4)\n"
            "preds = torch.empty(0)\n"
            "for x in loader:\n"
            "    preds = torch.cat((preds, model(x)))"
        ),
    ),
    Code(
        "VL105", RULE, "warning",
        "a graph-carrying value is stored on an object, class or module that outlives the call",
        finds=(
            "`self.x = out` in a module's `forward` (or a method it runs), stores on the class or a `global` — not "
            "a module's parameter slot (`self.bn.weight = ...`), an attribute every call re-initialises before "
            "using it (`self.init_hidden()` first, with no training loop in between), nor a cache stored only when "
            "missing (`if self.x is None:`) that another method of the class clears"
        ),
        fix="`.detach()`",
        why=(
            "An attribute of an object, a class or a module outlives the call: it keeps the graph of the last call "
            "(of every call, for a list) after the backward that would have freed it."
        ),
        example=(
            "class Net(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.fc = nn.Linear(4, 4)\n"
            "\n"
            "    def forward(self, x):\n"
            "        self.last = self.fc(x)\n"
            "        return self.last"
        ),
    ),
    Code(
        "VL106", RULE, "warning",
        "recurrent state carries its graph into the next iteration",
        finds=(
            "recurrent state fed back with no detach: `out, h = rnn(x, h)` in a training/data loop, where `rnn` is "
            "a module (by evidence) and `h` carries its graph (`h.detach_()`, `hidden[0].detach_()`, a helper of "
            "the file that detaches, or a detach mapped over the state — `apply_to_tensor(h, "
            "torch.Tensor.detach)`, `tree_map(lambda t: t.detach(), h)` — cut it)"
        ),
        fix="`h.detach()` in the call when `h` is known to be a tensor",
        why=(
            "Without a detach, the hidden state's graph reaches back through every earlier step: each backward "
            "runs through the whole history, and its activations are never freed (truncated backpropagation needs "
            "`h.detach()`)."
        ),
        example=(
            "rnn = nn.GRU(4, 4)\n"
            "h = torch.zeros(1, 1, 4)\n"
            "for x, y in loader:\n"
            "    out, h = rnn(x, h)\n"
            "    loss = (out - y).pow(2).mean()\n"
            "    loss.backward()"
        ),
    ),
    Code(
        "VL107", RULE, "warning",
        "an autograd.Function keeps its output on ctx (a reference cycle through grad_fn)",
        finds=(
            "an `autograd.Function` keeping its output (or a view of it, or a wrapper sharing its memory) on "
            "`ctx`, in `forward`, `setup_context` or a helper they hand `ctx` to: a reference cycle output -> "
            "grad_fn -> ctx -> output"
        ),
        fix="— (use `save_for_backward`)",
        why=(
            "output -> `grad_fn` -> `ctx` -> output is a reference cycle: the output and its graph are freed only "
            "by the cyclic garbage collector, not when the last reference goes; `ctx.save_for_backward` keeps the "
            "tensor without the cycle."
        ),
        example=(
            "class Square(torch.autograd.Function):\n"
            "    @staticmethod\n"
            "    def forward(ctx, x):\n"
            "        y = x * x\n"
            "        ctx.y = y\n"
            "        return y"
        ),
    ),
)


_APPENDERS = {"append", "extend", "insert", "appendleft", "add", "push", "put"}
_IN_PLACE_ADDERS = frozenset({"add_", "sub_", "addcmul_", "addcdiv_", "lerp_"})
_IN_PLACE_SCALERS = frozenset({"mul_", "div_"})
_CONCATENATORS = {"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack"}
_TENSOR_FACTORIES = {"zeros", "ones", "randn", "rand", "empty", "full", "zeros_like", "ones_like", "randn_like", "empty_like"}
_PARAMETER_SLOTS = frozenset({"weight", "bias"})
_LIFETIME_WORDS = {OUTLIVES_CALL: "for as long as the object or module lives", "iteration": "across every iteration of the loop"}


def _fixes(ctx: LintContext, values: list[ast.AST], scalar: bool, known: list[ast.AST] = (), place: str | None = None) -> tuple[Fix, ...]:
    """``.detach()`` (and ``.item()`` on a proven 0-d tensor) of what is stored, only where it cannot break the
    code (fix_safety.py): every value proven a tensor, and ``place`` never read where a graph is needed."""
    values = [value for value in values if value in known or ctx.tainted(value)]
    if not values:
        return ()
    types = tensor_types(ctx)
    if not all(types.is_tensor(v) for v in values):
        return ()
    scope = ctx.scope.node
    if needs_graph_later(place, scope, ctx.scope.cls) and not all(backpropagated_here(v, scope, ctx.tainted) for v in values):
        return ()
    texts = ", ".join(f"`{ctx.positions.segment(v)}`" for v in values)
    detach = Fix(f"Store {texts} detached (.detach())", tuple(e for v in values for e in detach_edits(ctx.positions, v)))
    if not scalar or len(values) != 1 or not types.is_scalar_tensor(values[0]):
        return (detach,)
    item = Fix(
        f"Store {texts} as a Python number (.item(); waits for the GPU)",
        detach_edits(ctx.positions, values[0], method="item"),
    )
    return (detach, item)


def tensor_types(ctx: LintContext) -> TensorTypes:
    """The tensor facts of the function being walked, built once per function."""
    key = ("tensor-types", id(ctx.scope.node))
    found = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = TensorTypes(ctx.facts, ctx.evidence, ctx.scope.node, ctx.scope.cls)
    return found


def _looks_scalar(ctx: LintContext, place: str, value: ast.AST) -> bool:
    """Losses and running totals are 0-d tensors, where .item() is a safe alternative."""
    text = f"{place} {ctx.positions.segment(value)}".lower()
    return any(word in text for word in ("loss", "total", "running", "score", "acc", "sum", "avg"))


def _stored_values(call: ast.Call) -> list[ast.AST]:
    method = call.func.attr
    if method == "insert":
        return call.args[1:2]
    if method == "extend":
        return []  # an iterable: no single expression to detach
    args = list(call.args)
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        return list(args[0].elts)
    return args


def _kept_only_for_the_callers_backward(container: str, values: list[ast.AST], ctx: LintContext) -> bool:
    """``if with_backward: loss.backward(); loss = loss.detach()`` then ``losses.append(loss)``, and the function
    returns what ``losses`` holds (``return sum(losses)``): where the loop backpropagates, what it keeps is detached;
    where it keeps graphs, nothing of the loop backpropagates and the graphs are the result the caller
    differentiates. A local list, so nothing of it outlives the call."""
    loop = ctx.loops[-1] if ctx.loops else None
    node = ctx.scope.node
    if loop is None or "." in container or isinstance(node, ast.Module) or container not in returned_names(ctx) \
            or not _returns_contents(container, node):
        return False
    names = {v.id for v in values if isinstance(v, ast.Name)}
    if len(names) != len(values):
        return False
    branches = [b for b in ast.walk(loop) if isinstance(b, ast.If)]
    backward_lines = {c.lineno for c in ast.walk(loop) if _is_backward(c)}
    if not backward_lines:
        return False
    for name in names:
        covering = [b for b in branches if _backward_then_detach(b.body, name)]
        inside = {c.lineno for b in covering for stmt in b.body for c in ast.walk(stmt) if _is_backward(c)}
        if not covering or backward_lines - inside:
            return False  # a backward outside the detaching branch: the kept graphs may be a training loop's
    return True


def _differentiated_after_the_loop(container: str, ctx: LintContext) -> bool:
    """``values = []``; ``for t in steps: values.append(critic(s))``; ``torch.cat(values)`` into the loss and
    ``loss.backward()`` after the loop (truncated BPTT, REINFORCE, a rollout's value losses): the kept graphs are
    the ones that backward needs, and the list is made anew for each of them (in the call, or in the iteration
    of the enclosing loop), so no graph outlives its backward."""
    node = ctx.scope.node
    if not ctx.loops or "." in container or isinstance(node, ast.Module):
        return False
    if container not in ctx.evidence.backward_inputs.get(id(node), ()):
        return False
    loop = ctx.loops[-1]
    enclosing = ctx.loops[-2] if len(ctx.loops) > 1 else None
    within = enclosing or node  # where the list must be made anew, and its backward come
    first, last = within.lineno, within.end_lineno or within.lineno
    made = any(first <= store.lineno < loop.lineno and is_fresh(store.value) and container in {dotted(t) for t in store.targets}
               for store in ctx.facts.stores_inside(node) if isinstance(store, ast.Assign))
    if not made:
        return False
    after = loop.end_lineno or loop.lineno
    positions = [p for places in ctx.evidence.backward_roots.get(id(node), {}).values() for p in places]
    return any(after < line <= last for line, _ in positions)


_REDUCERS = _CONCATENATORS | {"sum"}


def _reduced_into_the_result(container: str, values: list[ast.AST], ctx: LintContext) -> bool:
    """``for st in range(0, len(data), bs): outs.append(model(data[st:st + bs]))``; ``return torch.cat(outs)``:
    the call's own input run in micro-batches and joined into what it returns. The graphs are the result, kept
    only during the call, as one forward over the whole input would keep them. Only for chunks of a parameter
    (a loop over a loader keeps a whole dataset's graphs: an evaluation missing ``no_grad``), a list made here,
    never handed anywhere but to the joining call, read only to be joined (or sized), in a function with no
    backward (a training loop keeps each step's graph for nothing)."""
    func = ctx.scope.node
    loop = ctx.loops[-1] if ctx.loops else None
    if "." in container or isinstance(func, ast.Module) or loop is None or container not in returned_names(ctx):
        return False
    if not _chunks_of_a_parameter(loop, values, func):
        return False
    key = ("reduced-into-result", id(func), container)
    known = ctx.memo.get(key)
    if known is None:
        known = ctx.memo[key] = _only_joined_into_return(container, func)
    return known


_CHUNKERS = {"split", "chunk", "tensor_split", "unbind"}


def _chunks_of_a_parameter(loop: ast.AST, values: list[ast.AST], func: ast.AST) -> bool:
    """The loop walks a parameter in pieces: ``for part in x.split(n)`` / ``torch.chunk(x, n)``, or what is
    stored is computed from a slice of it (``data[st:end]``)."""
    args = func.args
    parameters = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs} - {"self", "cls"}
    iterated = getattr(loop, "iter", None)
    if isinstance(iterated, ast.Call) and last_name(call_name(iterated) or "") in _CHUNKERS:
        func_node = iterated.func
        split = func_node.value if isinstance(func_node, ast.Attribute) and not dotted(func_node.value) == "torch" \
            else (iterated.args[0] if iterated.args else None)
        if isinstance(split, ast.Name) and split.id in parameters:
            return True
    return bool(values) and all(
        any(isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Slice) and isinstance(n.value, ast.Name)
            and n.value.id in parameters for n in ast.walk(value))
        for value in values)


def _only_joined_into_return(container: str, func: ast.AST) -> bool:
    args = func.args
    if container in {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}:
        return False  # the caller's list: what goes in outlives the call
    returned = names_reaching_return(func)
    allowed: set[int] = set()  # the Name nodes of the list that are fine: appended to, joined, sized
    joined = False
    for node in ast.walk(func):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and container in node.names:
            return False
        if _is_backward(node) or isinstance(node, (ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == container for t in node.targets):
            if len(node.targets) != 1 or not _new_empty_list(node.value):
                return False
        if not isinstance(node, ast.Call):
            continue
        func_node = node.func
        if isinstance(func_node, ast.Attribute) and isinstance(func_node.value, ast.Name) \
                and func_node.value.id == container and func_node.attr in _APPENDERS:
            allowed.add(id(func_node.value))
        elif last_name(call_name(node) or "") in _SIZE_ONLY:
            allowed |= {id(a) for a in node.args if isinstance(a, ast.Name) and a.id == container}
        elif last_name(call_name(node) or "") in _REDUCERS and node.args \
                and isinstance(node.args[0], ast.Name) and node.args[0].id == container:
            if not _flows_into_return(node, func, returned):
                return False
            allowed.add(id(node.args[0]))
            joined = True
    uses = [n for n in ast.walk(func) if isinstance(n, ast.Name) and n.id == container and isinstance(n.ctx, ast.Load)]
    return joined and all(id(n) in allowed for n in uses)


def _new_empty_list(value: ast.AST) -> bool:
    return (isinstance(value, ast.List) and not value.elts) or (
        isinstance(value, ast.Call) and call_name(value) == "list" and not value.args)


def _flows_into_return(call: ast.Call, func: ast.AST, returned: set[str]) -> bool:
    """The joining call sits in a ``return`` or is bound to a name that reaches it (``out = torch.cat(outs)``)."""
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and node.value is not None and any(n is call for n in ast.walk(node.value)):
            return True
        if isinstance(node, ast.Assign) and any(n is call for n in ast.walk(node.value)):
            targets = {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            return bool(targets & returned)
    return False


_SIZE_ONLY = {"len", "bool", "str", "repr", "print", "isinstance", "type"}


def _returns_contents(container: str, func: ast.AST) -> bool:
    """Of a container that reaches what ``func`` returns: it goes there as its elements (``return sum(losses)``,
    ``torch.stack(outs)``, the list itself, through assignments), not merely as its size (``len(losses)``)."""
    sized = {id(arg) for call in ast.walk(func) if isinstance(call, ast.Call) and call_name(call) in _SIZE_ONLY
             for arg in call.args if isinstance(arg, ast.Name) and arg.id == container}
    uses = [n for ret in ast.walk(func) if isinstance(ret, (ast.Return, ast.Assign)) and ret.value is not None
            for n in ast.walk(ret.value) if isinstance(n, ast.Name) and n.id == container]
    return any(id(n) not in sized for n in uses)


def _is_backward(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and call_name(node).rsplit(".", 1)[-1] == "backward"


def _backward_then_detach(body: list[ast.stmt], name: str) -> bool:
    """The branch backpropagates ``name`` and then re-binds it detached (``.detach()`` / ``.item()``)."""
    backward_at = next((i for i, stmt in enumerate(body) if isinstance(stmt, ast.Expr) and _is_backward(stmt.value)
                        and isinstance(stmt.value.func, ast.Attribute) and dotted(stmt.value.func.value) == name), None)
    if backward_at is None:
        return False
    for stmt in body[backward_at + 1:]:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == name and isinstance(stmt.value, ast.Call)
                and isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr in {"detach", "item"}
                and dotted(stmt.value.func.value) == name):
            return True
    return False


class RetainedGraph(Rule):
    codes = CODES

    def check_kept_argument(self, call: ast.Call, argument: ast.AST, effect: Effect, ctx: LintContext) -> None:
        report_kept_argument(ctx, call, argument, effect)

    def check_statement(self, stmt: ast.stmt, ctx: LintContext) -> None:
        kind = type(stmt)
        if kind is ast.Assign:
            self._assign(stmt, ctx)
        elif kind is ast.Expr:
            call = stmt.value
            if type(call) is ast.Call and type(call.func) is ast.Attribute and call.func.attr in _APPENDERS:
                if ctx.state.grad_off:
                    check_kept_output(stmt, call, ctx)  # a framework's no-grad per-batch hook (framework_hooks.py)
                self._append(stmt, call, ctx)
            elif type(call) is ast.Call and type(call.func) is ast.Attribute and call.func.attr == "update":
                self._update(stmt, call, ctx)
            elif type(call) is ast.Call and type(call.func) is ast.Attribute and call.func.attr in _IN_PLACE_ADDERS:
                self._add_in_place(stmt, call, ctx)
            elif type(call) is ast.Call and type(call.func) is ast.Attribute and call.func.attr == "copy_" and call.args:
                self._overwrite_in_place(stmt, call.func.value, call.args[0], ctx)
        elif kind is ast.AugAssign:
            if type(stmt.op) is ast.Add:
                self._accumulate(stmt, stmt.target, stmt.value, ctx)
        elif kind is ast.AnnAssign and stmt.value is not None and type(stmt.target) is ast.Attribute:
            self._attribute_store(stmt, stmt.target, stmt.value, ctx)

    # -- accumulators ---------------------------------------------------------------------
    def _accumulate(self, stmt: ast.stmt, target: ast.AST, value: ast.AST, ctx: LintContext) -> None:
        name = base_dotted(target)  # ``totals[key] += loss`` accumulates into ``totals``
        if name is None or ctx.state.grad_off or _through_data(target) or not ctx.labels(value):
            return  # with recording off the sum is a new tensor with no history, whatever ``value`` carries
        kept = _leak_lifetime(name, ctx)
        if kept is None:
            return
        if ctx.tainted(value):
            self._report_accumulation(stmt, name, value, kept, ctx)
        elif kept == OUTLIVES_CALL:
            ctx.keep_effect(value, Effect("VL101", name, "adds it to", ctx.qualified_name(ctx.scope.node)))

    def _accumulate_rebinding(self, stmt: ast.Assign, name: str, value: ast.AST, ctx: LintContext, added: ast.AST | None = None) -> None:
        """``total = total + loss`` and ``ema = a * loss + (1 - a) * ema`` are ``total += loss`` spelled out:
        the new value is arithmetic on the old one, so the assignment is not a reset. ``added``: the part to
        detach (found among the operands when not given)."""
        if ctx.tainted(value) and carried_across(ctx.loops, name, stmt, ctx) is not None and not backpropagated(name, ctx):
            if added is None:
                others = [part for part in _arithmetic_leaves(value) if dotted(part) != name and ctx.tainted(part)]
                added = others[0] if len(others) == 1 else value
            self._report_accumulation(stmt, name, added, "iteration", ctx)

    def _report_accumulation(self, stmt: ast.stmt, name: str, value: ast.AST, kept: str | None, ctx: LintContext) -> None:
        if kept is None:
            return
        freed = " (the step's backward has freed their saved activations, but not the graphs themselves, which fill host memory)"
        message = (
            f"`{name}` accumulates tensors that carry autograd history, so it keeps the graph of every step "
            f"{_LIFETIME_WORDS[kept]} alive{freed if freed_by_the_steps_backward([value], ctx) else ''}; add a "
            "detached value or a Python number instead."
        )
        ctx.report("VL101", stmt, message, _fixes(ctx, [value], _looks_scalar(ctx, name, value), place=name))

    def _assign(self, stmt: ast.Assign, ctx: LintContext) -> None:
        value = stmt.value
        if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and dotted(value.left) == name:
                self._accumulate_rebinding(stmt, name, value.right, ctx, added=value.right)
                return
            concatenates = isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and (is_sequence(value.left) or is_sequence(value.right))
            if isinstance(value, ast.BinOp) and not concatenates and any(dotted(leaf) == name for leaf in _arithmetic_leaves(value)):
                self._accumulate_rebinding(stmt, name, value, ctx)
                return
            if isinstance(value, ast.Call) and last_name(call_name(value)) in _CONCATENATORS and value.args:
                self._concatenate(stmt, name, value, ctx)
                return
        if isinstance(value, ast.Call) and self._recurrent(stmt, value, ctx):
            return
        for target in _flat_targets(stmt.targets):
            if isinstance(target, ast.Subscript) and _whole_slice(target):
                self._overwrite_in_place(stmt, target.value, value, ctx)  # ``self.stored_mean[:] = ...``
                continue
            if isinstance(target, ast.Subscript) and _reads_own_slot(target, value):
                # ``totals[k] = totals[k] + loss`` is ``totals[k] += loss``; ``batch[k] = batch[k][:n]`` adds nothing
                if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
                    added = value.right if _reads_own_slot(target, value.left) else value.left
                    self._accumulate(stmt, target, added, ctx)
                continue
            if isinstance(target, ast.Subscript) and _grows_by_key(target) and not _fixed_key(target, ctx):
                container = base_dotted(target.value)
                if container and isinstance(target.value, (ast.Name, ast.Attribute)) and _fixed_slots(ctx.state.resolve(container), ctx):
                    continue  # a list written only by index keeps one value per slot
                if ctx.labels(value) or (container and ctx.backpropagated_later(container, stmt, container=True)):
                    self._store(stmt, "VL103", container, [value], ctx, fixable=target in stmt.targets)
            elif isinstance(target, ast.Attribute):
                self._attribute_store(stmt, target, value, ctx, part_of_tuple=target not in stmt.targets)
            elif isinstance(target, ast.Name):
                self._global_store(stmt, target, ctx)

    def _concatenate(self, stmt: ast.Assign, name: str, call: ast.Call, ctx: LintContext) -> None:
        parts = call.args[0]
        if not isinstance(parts, (ast.Tuple, ast.List)) or not any(dotted(e) == name for e in parts.elts):
            return
        others = [e for e in parts.elts if dotted(e) != name]
        if not any(ctx.tainted(e) for e in others):
            return
        if carried_across(ctx.loops, name, stmt, ctx) is None or backpropagated(name, ctx):
            return
        message = (
            f"`{name}` grows by concatenating tensors that carry autograd history, so each iteration's graph "
            "stays alive through the result; concatenate detached values."
        )
        ctx.report("VL104", stmt, message, _fixes(ctx, others, False, place=name))

    # -- containers -----------------------------------------------------------------------
    def _append(self, stmt: ast.Expr, call: ast.Call, ctx: LintContext) -> None:
        if call.func.attr in ARITY and not (list_method_call(call) and is_known_list(
                call.func.value, ctx.scope.node, ctx.scope.cls, ctx.facts, ctx.state.resolve)):
            return  # not proven a list's append: some object's own method, which may detach what it is given
        if any(ctx.labels(arg) for arg in call.args):
            self._store(stmt, "VL102", base_dotted(call.func.value), _stored_values(call) or list(call.args), ctx)

    def _add_in_place(self, stmt: ast.Expr, call: ast.Call, ctx: LintContext) -> None:
        """``avg.add_(rate * (loss - avg))``, ``avg.mul_(d).add_(loss)``: ``+=`` spelled as a method, so the
        accumulator joins the graph of what it is given and keeps every step's."""
        receiver = call.func.value
        while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and receiver.func.attr in _IN_PLACE_SCALERS:
            receiver = receiver.func.value  # ``avg.mul_(d).add_(x)`` adds into ``avg``
        added = [a for a in call.args if ctx.tainted(a)]
        name = base_dotted(receiver)
        if not added or name is None or _through_data(receiver):
            return
        kept = _leak_lifetime(name, ctx)
        if kept is not None:
            self._report_accumulation(stmt, name, added[0], kept, ctx)

    def _overwrite_in_place(self, stmt: ast.stmt, receiver: ast.AST, value: ast.AST, ctx: LintContext) -> None:
        """``self.stored_mean[:] = self.stored_mean * (1 - m) + mean * m``, ``buf.copy_(buf * d + x)``: a running
        average written into the tensor itself, so it joins the graph of what it is given and, through its own
        old value, every earlier step's: ``+=`` spelled as an in-place write."""
        name = base_dotted(receiver)
        if name is None or not ctx.tainted(value):
            return
        leaves = _arithmetic_leaves(value)
        if not any(base_dotted(leaf) == name for leaf in leaves):
            return  # not an update of its own value: one call's graph at most (VL105's question)
        added = [leaf for leaf in leaves if base_dotted(leaf) != name and ctx.tainted(leaf)]
        self._report_accumulation(stmt, name, added[0] if len(added) == 1 else value, _leak_lifetime(name, ctx), ctx)

    def _update(self, stmt: ast.Expr, call: ast.Call, ctx: LintContext) -> None:
        """``meter.update(loss)`` / ``logs.update({"loss": loss})`` on an object that outlives the iteration or the
        call, of a class the file does not define (a function of the file is judged by its summary): a meter
        sums or keeps what it is given, a dict keeps it under its key. Keyword arguments are left alone."""
        if ctx.graph.site_of.get(id(call)) is not None or call.keywords:
            return  # ``logger.update(loss=loss)``: loggers of that shape commonly take ``.item()`` themselves
        container = base_dotted(call.func.value)
        if container is None or _owned_elsewhere(container, ctx) or ctx.keeps_nothing_given(call):
            return
        keyed = any(isinstance(a, ast.Dict) for a in call.args)
        values = []
        for argument in call.args:
            if isinstance(argument, (ast.List, ast.Tuple)):
                values.extend(argument.elts)
            elif isinstance(argument, ast.Dict):
                values.extend(argument.values)
            else:
                values.append(argument)
        graph = [v for v in values if ctx.tainted(v)]
        if not graph:
            return
        kept = _leak_lifetime(container, ctx)
        if kept is None:
            return
        if keyed:
            self._store(stmt, "VL103", container, graph, ctx)
            return
        message = (
            f"`{container}.update(...)` is given tensors that carry autograd history, and `{container}` lives "
            f"{_LIFETIME_WORDS[kept]}: a meter that sums or keeps what it is given keeps every step's graph alive; "
            "pass detached tensors or Python numbers."
        )
        ctx.report("VL101", stmt, message, _fixes(ctx, graph, len(graph) == 1 and _looks_scalar(ctx, container, graph[0]), place=container))

    def _store(self, stmt: ast.stmt, code: str, container: str | None, values: list[ast.AST], ctx: LintContext,
               fixable: bool = True) -> None:
        """A value goes into ``container`` (by append or by key): a leak when the container outlives it."""
        if container is None or _detached_by_its_class(container, ctx):
            return
        kept = _leak_lifetime(container, ctx)
        if kept is None:
            return
        if ctx.backpropagated_later(container, stmt, container=True):
            # ``losses.append(f(x)); losses[-1].backward()``: what is put there is differentiated, so it
            # carries graph even when computed by code the file cannot see, and older elements keep theirs
            graph = [v for v in values if ctx.tainted(v) or not sanitized(v)]
        else:
            graph = [v for v in values if ctx.tainted(v)]
        if graph and kept != OUTLIVES_CALL and (_kept_only_for_the_callers_backward(container, graph, ctx)
                                                or _reduced_into_the_result(container, graph, ctx)
                                                or _differentiated_after_the_loop(container, ctx)):
            return
        if graph and result_left_in_a_handed_in_object(container, graph, ctx):
            return  # the caller's own per-batch object, given what the call returns to it
        if not graph:
            if kept == OUTLIVES_CALL:
                how = "appends it to" if code == "VL102" else "stores it in"
                for value in values:
                    ctx.keep_effect(value, Effect(code, container, how, ctx.qualified_name(ctx.scope.node)))
            return
        if _reported_where_graph_went_in(ctx, code, graph, f"keeps in `{container}` {_LIFETIME_WORDS[kept]},"):
            return
        if freed_by_the_steps_backward(graph, ctx):
            # The saved activations are gone; what stays is each step's graph itself, in host memory.
            message = (
                f"`{container}` keeps tensors that carry autograd history {_LIFETIME_WORDS[kept]}: the step's "
                "backward has freed their saved activations, but each stored tensor still holds its step's whole "
                "graph, so host memory grows with every step; store detached tensors or Python numbers."
            )
        else:
            message = (
                f"`{container}` keeps tensors that carry autograd history {_LIFETIME_WORDS[kept]}, so every stored "
                "graph (with its saved activations) stays in memory; store detached tensors or Python numbers."
            )
        scalar = len(graph) == 1 and _looks_scalar(ctx, container, graph[0])
        ctx.report(code, stmt, message, _fixes(ctx, graph, scalar, known=graph, place=container) if fixable else ())

    # -- attributes and globals -----------------------------------------------------------
    def _attribute_store(
        self, stmt: ast.stmt, target: ast.Attribute, value: ast.AST, ctx: LintContext, part_of_tuple: bool = False
    ) -> None:
        name = dotted(target)
        if name is None:
            return
        head = name.split(".", 1)[0]
        if head == "ctx" and self._ctx_store(stmt, name, value, ctx):
            return
        scope = ctx.scope
        is_module = scope.cls is not None and scope.cls.name in ctx.evidence.module_classes
        in_forward = head == "self" and is_module and (scope.name in {"forward", "__call__"} or bool(ctx.graph.part_of_forward.get(id(scope.node))))
        on_class = scope.cls is not None and head in {scope.cls.name, "cls"}
        if not (in_forward or on_class) or "loss" in target.attr.lower():
            return  # a stored loss is there to be backpropagated by its owner
        if not ctx.tainted(value):
            return
        if target.attr in _PARAMETER_SLOTS and (head == "self" or ctx.evidence.is_module(target.value, scope.node)):
            return  # a module's parameter slot takes only a Parameter (a leaf) or a re-parametrisation
        if reinitialised_per_call(name, ctx, stmt.lineno) or memo_cache_with_clear(name, ctx):
            return  # state of one call, or a cache its owner clears
        if in_forward and _unchanged_input(value, ctx):
            return  # the caller's own tensor, as it came: the module adds no graph of its own to it
        if backpropagated(name, ctx):
            return
        where = "the module" if in_forward else "the class"
        message = (
            f"`{name}` keeps the graph of the last call alive on {where} between calls, so its activations "
            "are never freed while the next step allocates its own; store a detached tensor."
        )
        ctx.report("VL105", stmt, message, () if part_of_tuple else _fixes(ctx, [value], False, place=name))

    def _ctx_store(self, stmt: ast.stmt, name: str, value: ast.AST, ctx: LintContext) -> bool:
        """``ctx.y = out`` where ctx is an autograd.Function's: the output (or a tensor made in forward)
        kept as an attribute instead of with ``ctx.save_for_backward``."""
        known = ctx.graph.ctx_provenance.get(id(ctx.scope.node))
        if known is None:
            return False
        kind = OUTPUT if known.get(name) == OUTPUT else tensor_kind(value, known)  # ``return ctx.y`` too
        if kind == OUTPUT:
            message = (
                f"`{ctx.positions.segment(value)}` holds the Function's output (or shares its memory), so storing it "
                "on ctx makes a reference cycle (output -> grad_fn -> ctx -> output) that keeps it and its graph "
                "alive after backward; use ctx.save_for_backward."
            )
        else:
            # An input, an intermediate made in forward (kept with the node; the docs allow it) or a
            # non-tensor value: that is what ctx attributes are for.
            return True
        ctx.report("VL107", stmt, message)
        return True

    def _global_store(self, stmt: ast.Assign, target: ast.Name, ctx: LintContext) -> None:
        if target.id not in ctx.scope.declared_global or not ctx.tainted(stmt.value):
            return
        if backpropagated(target.id, ctx):
            return
        message = (
            f"the module global `{target.id}` keeps the graph of the call that set it alive after the call "
            "returns; store a detached tensor."
        )
        ctx.report("VL105", stmt, message, _fixes(ctx, [stmt.value], False, place=target.id))

    # -- recurrent state ------------------------------------------------------------------
    def _recurrent(self, stmt: ast.Assign, call: ast.Call, ctx: LintContext) -> bool:
        """``out, h = rnn(x, h)`` in a training/data loop with nothing that detaches ``h``."""
        targets = {sub.id for t in stmt.targets for sub in _flat_names(t)}
        carried = [sub for arg in call.args for sub in _flat_names(arg) if sub.id in targets]
        if not carried or not _runs_a_network(call, ctx):
            return False
        network = ctx.forward_kind(call) in (FORWARD, METHOD, DIFFERENTIABLE)
        carried = [
            node for node in carried
            if (ctx.tainted(node) or (network and MAYBE_GRAPH in ctx.labels(node)))
            and carried_across(ctx.loops, node.id, stmt, ctx) is not None
        ]
        if not carried:
            return False
        names = ", ".join(dict.fromkeys(f"`{node.id}`" for node in carried))
        message = (
            f"the recurrent state {names} is fed back without .detach(), so every iteration's graph is chained "
            "to the next and memory grows until the loop ends; detach it before reuse."
        )
        fixes = ()
        if all(self._safe_to_detach(node, call, ctx) for node in carried):
            edits = tuple(e for node in carried for e in detach_edits(ctx.positions, node))
            fixes = (Fix(f"Detach {names} before it is fed back", edits),)
        ctx.report("VL106", stmt, message, fixes)
        return True

    def _safe_to_detach(self, node: ast.Name, call: ast.Call, ctx: LintContext) -> bool:
        """A bare name may hold a tuple (LSTM) or None; detach only what is known to be a tensor."""
        if any(isinstance(arg, (ast.Tuple, ast.List)) and node in arg.elts for arg in call.args):
            return True
        for assign in ast.walk(ctx.scope.node):
            if isinstance(assign, ast.Assign) and any(dotted(t) == node.id for t in assign.targets):
                if isinstance(assign.value, ast.Call) and last_name(call_name(assign.value)) in _TENSOR_FACTORIES:
                    return "lstm" not in call_name(call).lower()
        return False


def _unchanged_input(value: ast.AST, ctx: LintContext) -> bool:
    """``self.anc_strides = anc_strides``: a parameter of the function, stored as it was passed."""
    node = ctx.scope.node
    if not isinstance(value, ast.Name) or isinstance(node, ast.Module):
        return False
    args = node.args
    parameters = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    stores = ctx.facts.stores_inside(node)
    rebound = assigned_names(stores, ctx.facts.calls_inside(node)) | {
        s.target.id for s in stores if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name)
    }
    return value.id in parameters and value.id not in rebound


def _runs_a_network(call: ast.Call, ctx: LintContext) -> bool:
    """A forward pass by evidence, or a function of this file that returns graph for these arguments."""
    if ctx.forward_kind(call) in (FORWARD, METHOD, DIFFERENTIABLE):
        return True
    return ctx.graph.site_of.get(id(call)) is not None and ctx.tainted(call)


def _arithmetic_leaves(value: ast.AST) -> list[ast.AST]:
    """The operands of a tree of arithmetic: ``a * loss + (1 - a) * ema`` -> a, loss, 1, a, ema."""
    if isinstance(value, ast.BinOp):
        return _arithmetic_leaves(value.left) + _arithmetic_leaves(value.right)
    if isinstance(value, ast.UnaryOp):
        return _arithmetic_leaves(value.operand)
    return [value]


def report_kept_argument(ctx: LintContext, call: ast.Call, argument: ast.AST, effect: Effect) -> None:
    """A graph-carrying argument passed to a function of this file that keeps it (``meter.update(loss)``)."""
    receiver = dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
    if receiver and receiver not in {"self", "cls"} and "." not in receiver:
        if any(rebound_in(loop, receiver, ctx) for loop in ctx.loops):
            return  # the object is made anew each iteration and takes the graph with it
    if receiver == "self" and reinitialised_per_call(effect.place, ctx, call.lineno):
        return  # ``self.init_hidden()`` emptied the place earlier in this call: it holds this call's values
    keeping = f"hands to `{effect.function}`, which {effect.how} `{effect.place}`, outliving the call,"
    if _reported_where_graph_went_in(ctx, effect.code, [argument], keeping):
        return
    text = ctx.positions.segment(argument)
    message = (
        f"`{text}` carries autograd history and `{effect.function}` {effect.how} `{effect.place}`, which outlives "
        "the call, so the graph of every call stays in memory; pass a detached value or a Python number."
    )
    scalar = _looks_scalar(ctx, effect.place, argument)
    ctx.report(effect.code, call, message, _fixes(ctx, [argument], scalar, place=effect.place if effect.place.startswith("self.") and receiver == "self" else None))


def _reported_where_graph_went_in(ctx: LintContext, code: str, kept: list[ast.AST], keeping: str) -> bool:
    """What is kept is a dict (``metrics``) built from graph-carrying tensors: the line to change is where each of
    them went into it (flow/origins.py), not where the dict is kept, which has no ``.detach()``. Reported there,
    once per place; False when something kept is not such a dict."""
    places = [ctx.state.origins.get(value.id) if isinstance(value, ast.Name) else None for value in kept]
    if not places or not all(places):
        return False
    function = ctx.qualified_name(ctx.scope.node)
    for value, origins in zip(kept, places):
        first, *others = sorted(origins)  # one leak, one finding: on the first place, naming the others
        named = ", ".join(f"`{o.text}`" for o in others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        what = f"`{first.text}` (with {named}) carry" if others else f"`{first.text}` carries"
        message = (
            f"{what} autograd history into `{value.id}`, which `{function}` {keeping} so every step's graph (with its "
            "saved activations) stays in memory; put it in detached (`.detach()`) or as a Python number (`.item()`)."
        )
        span = (first.line, first.column, first.end_line, first.end_column)
        ctx.report_span(code, span, message, chunk=first.chunk)
    return True


def _fixed_slots(container: str, ctx: LintContext) -> bool:
    """A module's forward writing the per-block slots of a list of fixed length on ``self``: each call
    overwrites the last call's state. Filled across the steps of a loop (``losses = [None] * steps``), the
    same list keeps every step's graph."""
    node = ctx.scope.node
    if not container.startswith("self.") or not (getattr(node, "name", None) == "forward" or ctx.graph.part_of_forward.get(id(node))):
        return False
    key = ("fixed-slots", container, id(ctx.scope.cls))
    known = ctx.memo.get(key)
    if known is None:
        known = ctx.memo[key] = fixed_slots(container, ctx.scope.node, ctx.scope.cls, ctx.facts)
    return known


def _fixed_key(target: ast.Subscript, ctx: LintContext) -> bool:
    """A key the function does not choose (``cache[name] = out`` in a hook made for one layer ``name``):
    every call overwrites the same slot."""
    node = ctx.scope.node
    if isinstance(node, ast.Module) or not isinstance(target.slice, ast.Name):
        return False
    key = target.slice.id
    args = node.args
    local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    if key in local:
        return False
    return key not in ctx.evidence._locals_of(node)


def _whole_slice(target: ast.Subscript) -> bool:
    """``buf[:]``, ``buf[...]``: every element of the tensor written in place."""
    index = target.slice
    if isinstance(index, ast.Constant):
        return index.value is Ellipsis
    return isinstance(index, ast.Slice) and index.lower is None and index.upper is None and index.step is None


def _reads_own_slot(target: ast.Subscript, value: ast.AST) -> bool:
    """``batch[k] = batch[k] + pad``: the slot is replaced by something made from what it held (no new slot)."""
    written = ast.dump(target, annotate_fields=False).replace("Store()", "Load()")
    return any(isinstance(node, ast.Subscript) and ast.dump(node, annotate_fields=False) == written for node in ast.walk(value))


def _grows_by_key(target: ast.Subscript) -> bool:
    """``d[key] = v`` keeps one value per key; ``out[:, i] = v`` writes into a tensor being built and
    ``d["last"] = v`` overwrites one slot, so neither piles up graphs."""
    index = target.slice
    if isinstance(index, ast.Constant):
        return False
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return not any(isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and p.value is Ellipsis) for p in parts)


def _through_data(target: ast.AST) -> bool:
    """``self.ema.data.mul_(d).add_(x)``, ``w.data[i] += x``: a write through ``.data``, a detached alias of the
    tensor, which autograd does not record: the tensor keeps no graph of what is added."""
    node = target
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        if isinstance(node, ast.Attribute) and node.attr == "data":
            return True
        node = node.value
    return False


def _owned_elsewhere(meter: str, ctx: LintContext) -> bool:
    """A meter the caller hands in (a parameter: what its class does is not known here), or one built from a
    package whose metrics update without recording a graph (facts/library.py)."""
    node = ctx.scope.node
    if not isinstance(node, ast.Module) and meter.split(".", 1)[0] in ctx.graph.parameters(node, bound=False) and not meter.startswith("self."):
        return True
    place = ctx.scope.cls if meter.startswith("self.") and ctx.scope.cls is not None else node
    return meter in _built_by_metric_packages(place, ctx)


def _built_by_metric_packages(place: ast.AST, ctx: LintContext) -> frozenset[str]:
    """The names that ``place`` (a class or a scope) assigns a call of a no-grad metrics package to, walked once
    per place: a class of thousands of lines is asked about every meter it updates."""
    key = ("metric-package-stores", id(place))
    found = ctx.memo.get(key)
    if found is None:
        names = set()
        for store in ast.walk(place):
            if isinstance(store, ast.Assign) and isinstance(store.value, ast.Call):
                head = (call_name(store.value) or "").split(".", 1)[0]
                if ctx.facts.imports.get(head, head).startswith(NO_GRAD_UPDATE_PACKAGES):
                    names.update(d for t in store.targets if (d := dotted(t)) is not None)
        found = ctx.memo[key] = frozenset(names)
    return found


def _detached_by_its_class(name: str, ctx: LintContext) -> bool:
    """``self.memory`` of a class with a method that detaches it (``self.memory.detach_()``, ``self.memory =
    self.memory.detach()``): recurrent state whose owner cuts its graph where its training loop says (a TGN
    memory's ``detach()`` called every batch), not an accumulation."""
    cls = ctx.scope.cls
    if cls is None or not name.startswith("self.") or name.count(".") != 1:
        return False
    key = ("detached-by-class", id(cls), name)
    known = ctx.memo.get(key)
    if known is None:
        known = False
        for node in ast.walk(cls):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "detach_" \
                    and dotted(node.func.value) == name:
                known = True
            elif isinstance(node, ast.Assign) and any(dotted(t) == name for t in node.targets) \
                    and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute) \
                    and node.value.func.attr == "detach" and dotted(node.value.func.value) == name:
                known = True
            if known:
                break
        ctx.memo[key] = known
    return known


def _leak_lifetime(name: str, ctx: LintContext) -> str | None:
    """How long ``name`` outlives what is stored in it, unless that graph is backpropagated on purpose."""
    kept = lifetime(name, ctx)
    return None if kept is None or backpropagated(name, ctx) else kept


def _flat_targets(targets: list[ast.AST]) -> list[ast.AST]:
    flat = []
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            flat.extend(_flat_targets(target.elts))
        else:
            flat.append(target.value if isinstance(target, ast.Starred) else target)
    return flat


def _flat_names(node: ast.AST) -> list[ast.Name]:
    if isinstance(node, ast.Name):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [name for elt in node.elts for name in _flat_names(elt)]
    return []
