"""missing-no-grad: inference code that records an autograd graph nobody will use.

With recording on, every intermediate activation of the forward pass is kept for a
backward pass; under no_grad/inference_mode they are freed as soon as they are consumed.

Inference code is a function named for inference (predict, evaluate, generate, ...), the ``__call__``
of an inference wrapper, a loop over validation or test data, or code after ``model.eval()``. It is
reported only when it certainly runs a forward pass (a module by evidence, or a function of this file
that does) with recording on, when no backward, ``autograd.grad`` or optimizer step is reachable from
it, and when nothing — a decorator, a caller's ``with torch.no_grad():``, the framework calling it —
switches recording off around it.
"""

from __future__ import annotations

import ast
import os
import re

from ...facts.dataflow import names_read, stored_names
from ...facts.forwards import DIFFERENTIABLE, FORWARD, forward_kind
from ...facts.gradmode import MAYBE, OFF
from ...findings import Code, Edit, Fix
from ...flow.summaries import PARAMETER
from ...flow.taint import CLEAN_FUNCTIONS, CLEAN_METHODS
from ...parse.edits import insert_line_above, wrap_in_with
from ...parse.paths import is_test_support
from ...parse.syntax import CONSTRUCTORS, INFERENCE_WORDS, base_dotted, dotted, last_name, is_backward_call, is_private_decoding_helper, iterates_eval_data, method_name, name_words, names_eval_data, receiver_name
from ...walker.rule import Rule
from ...walker.context import LintContext, Scope

RULE = "missing-no-grad"
CODES = (
    Code(
        "VL201", RULE, "warning",
        "inference code builds an autograd graph nobody uses",
        finds=(
            "inference code that records a graph: functions named like predict / infer / generate / evaluate / "
            "validate / test / encode / sample, `__call__` of an inference wrapper, any function that runs a model "
            "and returns only detached results (`.cpu().numpy()`, `.item()`), code after `model.eval()` (or a call "
            "of a function of the file that calls it), loops over val/test loaders — when a forward pass certainly "
            "runs (a module by evidence, or a function of the file that runs one, or a function of the file handed "
            "to a call such as a beam search step), no backward, `autograd.grad` or optimizer step is reachable, "
            "nothing computed there reaches a later backward, and no grad-mode switch is in force (see below)"
        ),
        fix=(
            "`@torch.no_grad()` above the `def` when no backward is reachable from what it returns (through every "
            "caller in the file, two calls up included), else `with torch.no_grad():` around the loop when what "
            "the loop computes reaches no backward; otherwise no fix"
        ),
        why=(
            "With recording on, autograd saves for a backward that never comes the activations every operation "
            "would need: inference then takes the memory of a training forward pass."
        ),
        example=(
            "model = nn.Linear(4, 4)\n"
            "\n"
            "\n"
            "def predict(x):\n"
            "    return model(x).argmax(dim=-1)"
        ),
    ),
    Code(
        "VL202", RULE, "warning",
        "an evaluation loop or routine proven to build an autograd graph nobody uses",
        finds=(
            "the part of missing-no-grad whose evidence does not rest on names: a module (by how it is built or "
            "used, not by its name) called directly, with recording on, in the code that drives the evaluation "
            "itself (a loop over validation or test data, or over a parameter every caller in the file passes "
            "such data to; code after `model.eval()`, switched back afterwards to a saved `model.training` or to "
            "training as the routine's last act, or not; a "
            "function that does either; a method of an object that holds its model in eval mode; a function "
            "calling a script's model that the script switched to eval mode and trains nowhere), where no "
            "backward, `autograd.grad` or optimizer step is reachable and nothing computed "
            "there reaches a later backward, and no grad-mode switch is in force (a decorator, a caller of the "
            "file, the framework's table)"
        ),
        fix=(
            "`@torch.no_grad()` above the `def` when no backward is reachable from what it returns (through every "
            "caller in the file), else `with torch.no_grad():` around the loop when what the loop computes reaches "
            "no backward; otherwise no fix"
        ),
        why=(
            "With recording on, autograd saves for a backward that never comes the activations every operation "
            "would need: evaluation then takes the memory of a training forward pass."
        ),
        example=(
            "def validate(model, val_loader):\n"
            "    model.eval()\n"
            "    total = 0.0\n"
            "    for x, y in val_loader:\n"
            "        total += F.cross_entropy(model(x), y).item()\n"
            "    return total"
        ),
    ),
)


# Methods of an nn.Module named for inference that are not parts of its forward.
_MODULE_INFERENCE_WORDS = {"generate", "predict", "inference", "infer", "sample", "sampling"}
_INFERENCE_WRAPPER = re.compile(r"predictor|infer|pipeline|evaluat|sampler|service|handler|engine|runner", re.IGNORECASE)
_LOOKED_AT = frozenset({ast.For, ast.AsyncFor, ast.Expr})  # loops over eval data, ``model.eval()``
_GRADIENT_WORK = {"requires_grad_", "enable_grad", "grad", "backward", "vjp", "jvp", "hessian", "jacobian", "manual_backward", "value_and_grad"}
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_PUTS = frozenset({"append", "extend", "insert", "appendleft", "put", "add"})


def _statements(stmts: list[ast.stmt]):
    """Every statement of a region, nested blocks included, nested definitions excluded."""
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, _NESTED):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if inner:
                yield from _statements(inner)
        for handler in getattr(stmt, "handlers", ()):
            yield from _statements(handler.body)
        for case in getattr(stmt, "cases", ()):
            yield from _statements(case.body)


def graph_building_call(stmts: list[ast.stmt], ctx: LintContext, strict: bool = False, once: bool = True) -> ast.Call | None:
    """The first call, in program order, that runs a forward pass with recording on: a module by evidence
    (called, or a method named for running it such as ``encode``), or a function of this file that runs
    one (``self.infer(x)``). ``once``: the region runs once per call (a function's body, not a loop's)."""
    graph = ctx.graph
    repeated: set[int] | None = None  # worked out when a dropped result first asks
    for stmt in _statements(stmts):
        if isinstance(stmt, _NESTED):
            continue
        mode = graph.mode_at(stmt)
        if mode in (OFF, MAYBE):
            continue
        for call in ctx.facts.calls_of(stmt):
            if ctx.forward_kind(call) in (FORWARD, DIFFERENTIABLE) and not (strict and _named_method(call, ctx)):
                if once and _result_dropped(stmt, call):
                    if repeated is None:
                        repeated = _repeated_statements(stmts)
                    if id(stmt) not in repeated:
                        continue  # run once for what it does on the way (a warm-up, hooks, calibration): its graph dies with the call
                return call
            site = graph.site_of.get(id(call))
            if site is not None and site.callee.name != "__init__" and graph.runs_forward.get(id(site.callee)) \
                    and id(site.callee) not in graph.picks_grad_mode:
                return call
            if any(graph.runs_forward.get(id(s.callee)) for s in graph.callbacks_of.get(id(call), ())):
                return call  # ``beam_search.search(state, step)`` where ``step`` runs the model
    return None


def _repeated_statements(stmts: list[ast.stmt]) -> set[int]:
    """The statements of a region that sit in one of its loops."""
    return {id(inner) for stmt in _statements(stmts) if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While))
            for inner in _statements(stmt.body)}


def _result_dropped(stmt: ast.stmt, call: ast.Call) -> bool:
    """``model(warm_up)`` or ``_ = model(x)``: nothing keeps what the call returns."""
    if isinstance(stmt, ast.Expr):
        return stmt.value is call
    return isinstance(stmt, ast.Assign) and stmt.value is call and all(isinstance(t, ast.Name) and t.id == "_" for t in stmt.targets)


def _proven(stmts: list[ast.stmt], ctx: LintContext, depth: int = 0) -> bool:
    """The region calls a module itself (``model(x)``, ``self.encoder(x)``: a module by how it is built or used),
    with recording on, or a function of this file that does so (two calls deep at most): not a method judged a
    forward by its name, not the module's own ``self(...)``."""
    graph = ctx.graph
    for stmt in _statements(stmts):
        if isinstance(stmt, _NESTED) or graph.mode_at(stmt) in (OFF, MAYBE):
            continue
        for call in ctx.facts.calls_of(stmt):
            if ctx.forward_kind(call) == FORWARD and not _named_method(call, ctx) and not _calls_self(call):
                if not _instance_without_parameters(call, ctx):
                    return True
            site = graph.site_of.get(id(call))
            if site is None or depth >= 2 or site.mode in (OFF, MAYBE) or site.callee.name in CONSTRUCTORS:
                continue
            if not isinstance(site.callee, _NESTED[:2]) or graph.part_of_forward.get(id(site.callee)) \
                    or id(site.callee) in graph.picks_grad_mode:
                continue  # a helper of a forward, or one that picks its grad mode itself (``if self.training``)
            if graph.scope_mode(site.callee) not in (OFF, MAYBE) and _proven(site.callee.body, ctx, depth + 1):
                return True
    return False


def _trains_false(call: ast.Call, func: ast.AST) -> bool:
    """``module.train(False)``, or ``module.train(training)`` where ``training`` is a parameter of ``func`` that
    defaults to False: a switch to eval mode."""
    if method_name(call) != "train" or len(call.args) != 1 or call.keywords:
        return False
    arg = call.args[0]
    if isinstance(arg, ast.Name):
        arguments = func.args
        positional = arguments.posonlyargs + arguments.args
        defaults = dict(zip([p.arg for p in positional][::-1], arguments.defaults[::-1]))
        defaults.update((p.arg, d) for p, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None)
        arg = defaults.get(arg.id)
    return isinstance(arg, ast.Constant) and arg.value is False


def _restores_mode(call: ast.Call, func: ast.AST) -> bool:
    """``model.train(was_training)`` where ``was_training = model.training`` was read in ``func``: the mode the
    module had before the evaluation comes back, which is no switch to training."""
    if method_name(call) != "train":
        return False
    args = list(call.args) + [k.value for k in call.keywords if k.arg == "mode"]
    if len(args) != 1 or not isinstance(args[0], ast.Name):
        return False
    saved = args[0].id
    return any(
        isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Attribute) and stmt.value.attr == "training"
        and any(isinstance(t, ast.Name) and t.id == saved for t in stmt.targets)
        for stmt in _statements(func.body)
    )


def _switched_back_at_the_end(call: ast.Call, func: ast.AST, ctx: LintContext) -> bool:
    """``model.train()`` as the routine's last work (``model.eval()``, the evaluation, ``model.train()``, ``return
    acc``): nothing after it runs a forward, a backward or an optimizer step, so the module is handed back in
    training mode and nothing is trained here."""
    body = func.body
    for index, stmt in enumerate(body):
        if not (isinstance(stmt, ast.Expr) and stmt.value is call):
            continue
        for later in body[index + 1:]:
            for other in ctx.facts.calls_inside(later):
                site = ctx.graph.site_of.get(id(other))
                if (forward_kind(ctx.evidence, other, func) is not None or is_backward_call(other) or method_name(other) in _GRADIENT_WORK
                        or method_name(other) == "step" or (site is not None and ctx.graph.runs_forward.get(id(site.callee)))):
                    return False
        return True
    return False


def _switches_to_training(call: ast.Call, func: ast.AST) -> bool:
    """``module.train()``, not ``module.train(False)`` nor the restore of a saved mode."""
    return method_name(call) == "train" and not _trains_false(call, func) and not _restores_mode(call, func)


def _returns_output(func: ast.AST, ctx: LintContext) -> bool:
    """A ``return`` hands back a forward pass's output as it came (``return self.model(x)``, or a name bound to
    one, not detached on the way: ``return out.detach().flatten(1)`` hands back no graph): a caller in another
    file may backpropagate it, so the waste is not proven here."""
    outputs: set[str] = set()

    def undetached(expr: ast.AST, names: bool) -> bool:
        if _detaches(expr):
            return False  # what carries no graph, by the taint's own tables
        if isinstance(expr, ast.Call) and ctx.forward_kind(expr) == FORWARD:
            return True
        if names and isinstance(expr, ast.Name) and expr.id in outputs:
            return True
        return any(undetached(child, names) for child in ast.iter_child_nodes(expr))

    for stmt in _statements(func.body):
        if isinstance(stmt, ast.Assign) and undetached(stmt.value, names=False):
            for target in stmt.targets:
                outputs |= stored_names(target)
    return any(
        isinstance(stmt, ast.Return) and stmt.value is not None and undetached(stmt.value, names=True)
        for stmt in _statements(func.body)
    )


def _returns_hooked(func: ast.AST, ctx: LintContext) -> bool:
    """The function hands back what a forward hook of the file stored (``self.outputs[key]`` read after
    ``self.model(x)``), or what it computes from that, itself or through a function of the file it calls: the
    forward ran for the hooks, and its graph goes back with their outputs."""
    hooked = _stored_by_hooks(ctx)
    if not hooked:
        return False
    key = ("returns-hooked", id(func))
    known = ctx.memo.get(key)
    if known is not None:
        return known
    ctx.memo[key] = False  # recursion guard
    derived: set[str] = set()

    def carries(expr: ast.AST) -> bool:
        if _detaches(expr):
            return False
        if isinstance(expr, (ast.Attribute, ast.Subscript)) and base_dotted(expr) in hooked:
            return True
        if isinstance(expr, ast.Name):
            return expr.id in derived
        if isinstance(expr, ast.Call):
            site = ctx.graph.site_of.get(id(expr))
            if site is not None and isinstance(site.callee, _NESTED[:2]) and _returns_hooked(site.callee, ctx):
                return True
        return any(carries(child) for child in ast.iter_child_nodes(expr))

    for stmt in _statements(func.body):
        if isinstance(stmt, ast.Assign) and carries(stmt.value):
            for target in stmt.targets:
                derived |= stored_names(target)
    known = ctx.memo[key] = any(
        isinstance(stmt, ast.Return) and stmt.value is not None and carries(stmt.value) for stmt in _statements(func.body))
    return known


def _stored_by_hooks(ctx: LintContext) -> frozenset[str]:
    """The ``self.`` containers that the file's hook functions put what they are handed into
    (``self.outputs[key].append(output)``)."""
    key = ("hook-stores", id(ctx.tree))
    found = ctx.memo.get(key)
    if found is None:
        hooks = ctx.graph.hooks
        names = set()
        for func in ctx.facts.scopes:
            if id(func) not in hooks:
                continue
            for call in ctx.facts.calls_inside(func):
                if isinstance(call.func, ast.Attribute) and call.func.attr in _PUTS:
                    names.add(base_dotted(call.func.value))
            for store in ctx.facts.stores_inside(func):
                for target in getattr(store, "targets", [getattr(store, "target", None)]):
                    if isinstance(target, ast.Subscript):
                        names.add(base_dotted(target))
        found = ctx.memo[key] = frozenset(n for n in names if n and n.startswith("self."))
    return found


def _instance_without_parameters(call: ast.Call, ctx: LintContext) -> bool:
    """``mapper(x)`` where ``mapper = Mapper(...)`` in this scope (or the module's) and ``Mapper``, a module class
    of this file, makes no parameter or submodule: its forward records nothing of its own."""
    name = dotted(call.func)
    scopes = {id(ctx.scope.node): ctx.scope.node, id(ctx.tree): ctx.tree}
    for scope in scopes.values():
        for stmt in _statements(scope.body):
            if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)):
                continue
            if any(dotted(t) == name for t in stmt.targets):
                cls = ctx.facts.classes.get(last_name(dotted(stmt.value.func) or ""))
                return cls is not None and ctx.evidence._makes_no_parameters(cls)
    return False


def _calls_self(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == "self"


def _drives_evaluation(func: ast.AST, ctx: LintContext, depth: int = 0) -> bool:
    """The function drives an evaluation itself: it switches a module to eval mode (and not back to training),
    or loops over validation or test data, or is a method of an object that holds its model in eval mode; or every
    caller of it in the file does (two calls up at most)."""
    calls = ctx.facts.calls_inside(func)
    switches = any(method_name(c) == "eval" and not c.args or _trains_false(c, func) for c in calls)
    if switches and not any(_switches_to_training(c, func) and not _switched_back_at_the_end(c, func, ctx) for c in calls):
        return True
    if any(iterates_eval_data(node) for node in _statements(func.body)):
        return True
    cls = ctx.facts.class_of(func)
    if depth == 0 and cls is not None and func in cls.body and _holds_eval_mode(cls, ctx):
        return True  # its own method, not a helper it hands to a library (that one is judged by its callers' code)
    if _calls_global_in_eval(func, ctx):
        return True  # ``model(**enc)`` of a script's model that the script switched to eval mode
    if _loops_over_eval_data_passed_in(func, ctx):
        return True  # ``for x, y in loader`` where every caller passes ``val_loader``
    callers = ctx.graph.callers_of(func)
    return bool(callers) and depth < 2 and all(
        isinstance(site.caller, _NESTED[:2]) and _drives_evaluation(site.caller, ctx, depth + 1) for site in callers)


def _loops_over_eval_data_passed_in(func: ast.AST, ctx: LintContext) -> bool:
    """A loop of ``func`` iterates one of its parameters (``for x, y in loader``, ``enumerate(tqdm(loader))``) and
    every caller in the file passes validation or test data there (``evaluate(model, val_loader)``)."""
    arguments = func.args
    parameters = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
    looped = {
        name for loop in _statements(func.body) if isinstance(loop, (ast.For, ast.AsyncFor))
        for name in _iterated_parameters(loop.iter, parameters)
    }
    callers = ctx.graph.callers_of(func)
    if not looped or not callers:
        return False
    for site in callers:
        bound = dict(ctx.graph.bound_arguments(site))
        if not all(p in bound and names_eval_data(bound[p]) for p in looped):
            return False
    return True


def _iterated_parameters(iterable: ast.AST, parameters: set[str]) -> set[str]:
    """The parameter a loop walks, through the wrappers that hand its items on (``enumerate``, ``tqdm``, ``iter``)."""
    while isinstance(iterable, ast.Call) and last_name(dotted(iterable.func) or "") in _ITEM_WRAPPERS and iterable.args:
        iterable = iterable.args[0]
    return {iterable.id} & parameters if isinstance(iterable, ast.Name) else set()


_ITEM_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "trange", "track", "progress_bar"})


def _holds_eval_mode(cls: ast.ClassDef, ctx: LintContext) -> bool:
    """An object, not a module, that switches its model to eval mode (``self.model.eval()``, typically when it is
    built) and nowhere back to training, and trains nowhere (no backward, optimizer step or gradient work written
    in any of its methods): every forward pass it runs is an evaluation — a predictor, an embedding wrapper, a
    serving handler. A method that hands the model to another file's trainer is no evaluation: what reaches
    training (cross-file included) is never reported."""
    key = ("holds-eval", id(cls))
    if key not in ctx.memo:
        methods = [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        switches = trains = False
        for method in methods:
            for call in ctx.facts.calls_inside(method):
                held = (receiver_name(call) or "").startswith("self.")  # the object's own model, not one it is handed
                if method_name(call) == "eval" and not call.args and not call.keywords or _trains_false(call, method):
                    switches = switches or held
                elif _switches_to_training(call, method) or method_name(call) in _GRADIENT_WORK:
                    trains = True
        ctx.memo[key] = (
            switches and not trains and cls.name not in ctx.evidence.module_classes
            and not any(ctx.facts.trains_directly(m, written=True) for m in methods)
        )
    return ctx.memo[key]


def _globals_in_eval_mode(ctx: LintContext) -> frozenset[str]:
    """Globals the file's own top-level code switches to eval mode (``model.eval()``, ``model =
    load(...).eval()``), in a file that trains nowhere (no backward, gradient work, optimizer step or switch to
    training): a serving script's or a demo's model, which every function calling it evaluates."""
    key = ("globals-in-eval",)
    if key not in ctx.memo:
        held: set[str] = set()
        facts = ctx.facts
        trains = any(_may_train(c) for c in facts.all_calls)
        if not trains:
            for stmt in _statements(ctx.tree.body):
                for call in facts.calls_of(stmt):
                    if method_name(call) != "eval" or call.args or call.keywords:
                        continue
                    receiver = receiver_name(call)
                    if receiver and "." not in receiver:
                        held.add(receiver)  # ``model.eval()``
                    elif isinstance(stmt, ast.Assign) and _chained_from(stmt.value, call):
                        held |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}  # ``model = (...).eval()``
        ctx.memo[key] = frozenset(held)
    return ctx.memo[key]


def _calls_global_in_eval(func: ast.AST, ctx: LintContext) -> bool:
    """``func`` calls a global the file holds in eval mode, by that global's own name (not a local or
    parameter of the same name)."""
    held = _globals_in_eval_mode(ctx)
    return bool(held) and any(dotted(c.func) in held for c in ctx.facts.calls_inside(func)) \
        and not held & ctx.evidence._locals_of(func)


def _may_train(call: ast.Call) -> bool:
    name = method_name(call)
    if name == "train":
        return not (len(call.args) == 1 and isinstance(call.args[0], ast.Constant) and call.args[0].value is False)
    return is_backward_call(call) or name in _GRADIENT_WORK or name == "step"


def _chained_from(value: ast.AST, call: ast.Call) -> bool:
    """``call`` is a link of the chain ``value`` is (``Net.load(p).cuda().eval()``)."""
    while isinstance(value, ast.Call):
        if value is call:
            return True
        func = value.func
        value = func.value if isinstance(func, ast.Attribute) else None
    return False


def _method_of_eval_object(scope: Scope, ctx: LintContext) -> bool:
    """A method (not the constructor, not a nested function) of an object that holds its model in eval mode."""
    cls = scope.cls
    return cls is not None and scope.node in cls.body and not _constructor(scope.node) and _holds_eval_mode(cls, ctx)


def _proven_function(func: ast.AST, ctx: LintContext) -> bool:
    """A function reported for its name or for what it returns is proven when it calls a module itself and drives
    the evaluation."""
    return _proven(func.body, ctx) and _drives_evaluation(func, ctx)


def _named_method(call: ast.Call, ctx: LintContext) -> bool:
    """``model.encode_info(x)``: a module's method judged a forward by its name only (``self.model(x)``
    calls the module itself)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr == "forward":
        return False
    name = dotted(func)
    return not (name and (ctx.evidence.is_module_name(name, ctx.scope.node) or ctx.evidence.is_differentiable_name(name, ctx.scope.node)))


def _does_gradient_work(node: ast.AST, ctx: LintContext) -> bool:
    return ctx.graph.trains_node(node, ctx.scope.node) or any(
        method_name(call) in _GRADIENT_WORK for call in ctx.facts.calls_inside(node)
    )


class MissingNoGrad(Rule):
    codes = CODES

    def check_scope(self, ctx: LintContext) -> None:
        scope = ctx.scope
        if is_test_support(ctx.path):
            return  # tests run forward passes to check them: a test run's cost, not a training or serving step's
        if not isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)) or ctx.state.grad_off:
            return
        if scope.mode in (OFF, MAYBE):
            return
        named = self._is_inference_function(scope, ctx)
        if not (named or _method_of_eval_object(scope, ctx) or _calls_global_in_eval(scope.node, ctx)
                or _loops_over_eval_data_passed_in(scope.node, ctx)):
            return
        call = graph_building_call(scope.node.body, ctx)
        if call is None or _does_gradient_work(scope.node, ctx) or self._backward_reachable(scope.node, ctx):
            return
        proven = _proven_function(scope.node, ctx) and not _returns_output(scope.node, ctx) and not _returns_hooked(scope.node, ctx)
        if not (named or proven):
            return  # its object's eval mode says nothing of a method it calls by name (``self.model.encode``)
        ctx.memo[("inference", id(scope.node))] = True
        message = (
            f"`{scope.name}` runs the model with autograd recording on, so every intermediate activation is "
            "kept for a backward pass that never comes; run it under torch.no_grad()."
        )
        ctx.report("VL202" if proven else "VL201", call, message, self._decorator_fix(scope.node, ctx))

    def finish_scope(self, ctx: LintContext) -> None:
        """A function that runs a forward pass and hands back only detached results (``.cpu().numpy()``,
        ``.item()``), or only what it was given (the inputs it selected with the model's help), keeps nothing
        of the graph it recorded, whatever its name: inference code."""
        scope = ctx.scope
        node = scope.node
        if is_test_support(ctx.path) or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or scope.entry_off or scope.mode in (OFF, MAYBE):
            return
        if ctx.memo.get(("inference", id(node))) or ctx.memo.get(("reported-in", id(node))):
            return
        if scope.escapes or not _returns_a_value(node) or any(not label.startswith(PARAMETER) for label in scope.summary.returns):
            return
        if scope.cls is not None and scope.cls.name in ctx.evidence.module_classes:
            return  # a module's own methods: judged by name above
        graph = ctx.graph
        if graph.part_of_forward.get(id(node)) or id(node) in graph.hooks:
            return
        call = graph_building_call(node.body, ctx, strict=True)
        if call is None or _does_gradient_work(node, ctx) or self._backward_reachable(node, ctx):
            return
        if _returns_hooked(node, ctx):
            return  # it hands back what a forward hook kept: the graph goes with it
        message = (
            f"`{scope.name}` runs the model with autograd recording on although nothing it returns carries that "
            "graph, so every intermediate activation is kept for a backward pass that never comes; "
            "run it under torch.no_grad()."
        )
        ctx.report("VL202" if _proven_function(node, ctx) else "VL201", call, message, self._decorator_fix(node, ctx))

    def check_statement(self, stmt: ast.stmt, ctx: LintContext) -> None:
        if type(stmt) not in _LOOKED_AT or is_test_support(ctx.path) or ctx.state.grad_off or ctx.memo.get(("inference", id(ctx.scope.node))):
            return
        if ctx.scope.mode in (OFF, MAYBE) or ctx.graph.mode_at(stmt) in (OFF, MAYBE):
            return
        if ctx.graph.part_of_forward.get(id(ctx.scope.node)) or _constructor(ctx.scope.node):
            return  # a constructor's dry run (to find strides or shapes) is one-time initialisation
        if isinstance(stmt, (ast.For, ast.AsyncFor)) and iterates_eval_data(stmt):
            self._eval_loop(stmt, ctx)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and self._switches_to_eval(stmt.value, ctx):
            self._after_eval(stmt, ctx)

    # -- what counts as inference -----------------------------------------------------------
    def _is_inference_function(self, scope: Scope, ctx: LintContext) -> bool:
        name, cls = scope.name, scope.cls
        graph = ctx.graph
        if graph.part_of_forward.get(id(scope.node)) or id(scope.node) in graph.hooks:
            return False  # a helper of a module's forward (``self.predict(x)`` inside forward)
        if name == "__call__":
            return cls is not None and bool(_INFERENCE_WRAPPER.search(cls.name)) and cls.name not in ctx.evidence.module_classes
        words = set(name_words(name))
        if not (words & INFERENCE_WORDS) or is_private_decoding_helper(name):
            return False
        if name.startswith("test_") and os.path.basename(ctx.path).startswith(("test_", "conftest")):
            return False  # a unit test, not an evaluation routine
        if cls is not None and cls.name in ctx.evidence.module_classes:
            # Lightning runs *_step hooks under no_grad itself; encode/decode helpers serve forward().
            return not name.endswith("_step") and bool(words & _MODULE_INFERENCE_WORDS)
        return True

    def _backward_reachable(self, func: ast.AST, ctx: LintContext) -> bool:
        """A caller feeds what this function returns to backward (a training step two calls up included)."""
        graph = ctx.graph
        return bool(graph.result_backpropagated.get(id(func)) or graph.trains.get(id(func)))

    def _switches_to_eval(self, call: ast.Call, ctx: LintContext) -> bool:
        """``model.eval()`` on a module, or a call of a function of this file that does so."""
        if method_name(call) == "eval" and not call.args and receiver_name(call):
            return True
        site = ctx.graph.site_of.get(id(call))
        if site is None:
            return False
        methods = [method_name(c) for c in ctx.facts.calls_inside(site.callee)]
        return "eval" in methods and "train" not in methods

    # -- loops over validation data and code after model.eval() ------------------------------
    def _eval_loop(self, loop: ast.For, ctx: LintContext) -> None:
        call = graph_building_call(loop.body, ctx, once=False)
        if call is None or _does_gradient_work(loop, ctx) or self._region_feeds_backward(loop, ctx):
            return
        ctx.memo[("eval-loop", id(loop))] = True
        ctx.memo[("reported-in", id(ctx.scope.node))] = True
        message = (
            f"this loop over `{ctx.positions.segment(loop.iter)}` runs the model with autograd recording on, "
            "so each batch keeps its activations for a backward pass that never comes; wrap it in torch.no_grad()."
        )
        ctx.report("VL202" if _proven(loop.body, ctx) else "VL201", call, message, self._region_fix(loop, ctx))

    def _after_eval(self, stmt: ast.Expr, ctx: LintContext) -> None:
        following = ctx.siblings(stmt)[1]
        region: list[ast.stmt] = []
        for later in following:
            if any(method_name(c) == "train" for c in ctx.facts.calls_inside(later)):
                break
            region.append(later)
        if any(_does_gradient_work(s, ctx) for s in region):
            return
        for later in region:
            if isinstance(later, (ast.For, ast.AsyncFor)) and iterates_eval_data(later):
                return  # reported as an evaluation loop
            call = graph_building_call([later], ctx)
            if call is not None and not self._region_feeds_backward(later, ctx):
                message = (
                    f"after `{ctx.positions.segment(stmt.value)}` this forward pass still records autograd "
                    "history, keeping every activation alive for a backward pass that never comes; "
                    "run it under torch.no_grad()."
                )
                # A forward whose output the function hands back is its caller's to judge (``return layer(x) + x``
                # in a callback a converter runs): not proven here.
                proven = _proven([later], ctx) and not self._region_returned_value(later, call, ctx)
                ctx.report("VL202" if proven else "VL201", call, message, self._region_fix(later, ctx))
                ctx.memo[("reported-in", id(ctx.scope.node))] = True
                return

    # -- fixes: offered only when no backward is reachable from what the region computes ----------
    def _region_fix(self, stmt: ast.stmt, ctx: LintContext) -> tuple[Fix, ...]:
        scope = ctx.scope
        if isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not _does_gradient_work(scope.node, ctx) and not self._backward_reachable(scope.node, ctx):
                return self._decorator_fix(scope.node, ctx)
            if self._backward_reachable(scope.node, ctx) and self._region_returned(stmt, ctx):
                return ()
        if self._region_feeds_backward(stmt, ctx):
            return ()
        prefix, extra = _no_grad_name(ctx)
        edit = wrap_in_with(ctx.positions, stmt, f"{prefix}()")
        if edit is None:
            return ()
        return (Fix(f"Wrap in `with {prefix}():`", (*extra, edit)),)

    def _region_feeds_backward(self, stmt: ast.stmt, ctx: LintContext) -> bool:
        names = _stored_in(stmt, ctx)
        if not names:
            return False
        # Only a backward pass that runs after the region can consume what it computed (a training step
        # earlier in the same function rebinds its own ``loss``).
        scope = ctx.scope.node
        graph = ctx.graph
        derived = graph.dataflow(scope).derived(names, elements=True)
        end = stmt.end_lineno or stmt.lineno
        for call in ctx.facts.calls_inside(scope):
            if call.lineno > end and is_backward_call(call) and names_read(call) & derived:
                return True
        for site in graph.sites_from.get(id(scope), ()):
            consumed = graph.backprops_params.get(id(site.callee), ())
            if site.call.lineno > end and consumed:
                if any(p in consumed and names_read(a) & derived for p, a in graph.bound_arguments(site)):
                    return True
        # What the function returns is backpropagated by its caller or by the framework (a training step's
        # loss): a region that computes the returned value feeds that backward.
        if graph.result_backpropagated.get(id(scope)):
            returned = [names_read(ret.value) for ret in _statements(scope.body)
                        if isinstance(ret, ast.Return) and ret.value is not None and ret.lineno > end]
            return graph.dataflow_into(scope, returned).reaches_backward(names)
        return False

    def _region_returned_value(self, stmt: ast.stmt, call: ast.Call, ctx: LintContext) -> bool:
        """The forward ``call`` of the region is handed back as it came: returned there, or bound to a name that a
        later ``return`` hands back, not detached on the way (``x = layer(x) + x; return x``, not
        ``total += model(x).sum().item()``)."""
        names: set[str] = set()
        for inner in _statements([stmt]):
            if isinstance(inner, ast.Return) and inner.value is not None and _carries_call(inner.value, call):
                return True
            if isinstance(inner, (ast.Assign, ast.AnnAssign)) and inner.value is not None and _carries_call(inner.value, call):
                for target in (inner.targets if isinstance(inner, ast.Assign) else [inner.target]):
                    names |= stored_names(target)
        end = stmt.end_lineno or stmt.lineno
        return bool(names) and any(
            isinstance(ret, ast.Return) and ret.value is not None and ret.lineno > end and _undetached_reads(ret.value) & names
            for ret in _statements(ctx.scope.node.body))

    def _region_returned(self, stmt: ast.stmt, ctx: LintContext) -> bool:
        return any(isinstance(inner, ast.Return) for inner in _statements([stmt]))

    def _decorator_fix(self, func: ast.AST, ctx: LintContext) -> tuple[Fix, ...]:
        if self._backward_reachable(func, ctx) or _does_gradient_work(func, ctx):
            return ()
        prefix, extra = _no_grad_name(ctx)
        first_line = min([d.lineno for d in func.decorator_list] + [func.lineno])
        edit = insert_line_above(ctx.positions, first_line, f"@{prefix}()")
        return (Fix(f"Decorate `{func.name}` with @{prefix}()", (*extra, edit)),)


def _detaches(expr: ast.AST) -> bool:
    """A call whose result carries no graph, by the taint's own tables (``x.item()``, ``x.cpu().numpy()``)."""
    return isinstance(expr, ast.Call) and (method_name(expr) in CLEAN_METHODS or dotted(expr.func) in CLEAN_FUNCTIONS)


def _carries_call(expr: ast.AST, call: ast.Call) -> bool:
    """``call`` is part of ``expr`` and no detaching call takes it on the way (``layer(x) + x``, not
    ``layer(x).item()``)."""
    if expr is call:
        return True
    if _detaches(expr):
        return False
    return any(_carries_call(child, call) for child in ast.iter_child_nodes(expr))


def _undetached_reads(expr: ast.AST) -> set[str]:
    """The names ``expr`` reads, leaving out what a detaching call takes (``x.sum().item()`` reads nothing that
    keeps a graph)."""
    if _detaches(expr):
        return set()
    if isinstance(expr, (ast.Name, ast.Attribute)) and dotted(expr):
        return {dotted(expr), dotted(expr).split(".", 1)[0]}
    found: set[str] = set()
    for child in ast.iter_child_nodes(expr):
        found |= _undetached_reads(child)
    return found


def _stored_in(stmt: ast.stmt, ctx: LintContext) -> set[str]:
    """The names a region binds."""
    names: set[str] = set()
    for store in ctx.facts.stores_inside(stmt):
        targets = store.targets if isinstance(store, ast.Assign) else [getattr(store, "target", None)]
        for target in targets:
            if target is not None:
                names |= stored_names(target)
    return names


def _constructor(node: ast.AST) -> bool:
    return getattr(node, "name", None) in CONSTRUCTORS


def _returns_a_value(func: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Return) and node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None)
        for node in _statements(func.body)
    )


def _no_grad_name(ctx: LintContext) -> tuple[str, tuple[Edit, ...]]:
    """How to spell torch.no_grad in this file, adding ``import torch`` when nothing fits."""
    facts = ctx.facts
    if facts.torch_alias:
        return f"{facts.torch_alias}.no_grad", ()
    for local, qualified in facts.imported_names.items():
        if qualified == "torch.no_grad":
            return local, ()
    line = facts.future_import_end + 1
    return "torch.no_grad", (Edit(line, 0, line, 0, "import torch\n"),)
