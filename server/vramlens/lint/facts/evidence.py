"""Which names hold nn.Modules, judged from evidence in the file rather than from how they are named.

A name, ``self`` attribute or global is a module when it is bound to one (a constructor of an nn.Module
subclass of this file or of torch.nn, a known factory, a wrapper of a module, an element of a module
container), when something only a module has is used on it (``.eval()``, ``.parameters()``,
``.to(device)`` — tensors are not callable, so a called thing moved to a device is a module), when a
parameter is annotated as one, or when a caller in this file passes one (added by the call graph).
Evidence is collected per scope, regardless of order, which suits a name that holds one thing throughout.
"""

from __future__ import annotations

import ast
import builtins

from ..parse.syntax import call_name, dotted, is_backward_call, iter_nodes, last_name, own_returns
from .dataflow import ELEMENT, assignment_edges, backward_targets, names_read, stored_names
from .file_facts import FileFacts
from .frozen import frozen_names
from .project import project_ancestors
from .library import (
    BACKPROPAGATED_RETURNS,
    PIPELINE_METHODS,
    MODULE_BASES,
    MODULE_FACTORIES,
    MODULE_FACTORY_PREFIXES,
    MODULE_PASS_THROUGH,
    TORCH_ONLY_FACTORIES,
    NO_GRAD_CALLABLE_CONSTRUCTORS,
    NO_GRAD_CALLABLE_SUFFIXES,
    PRETRAINED_MODEL_OWNER_WORDS,
    PRETRAINED_NOT_MODEL_OWNER_WORDS,
    PRETRAINED_OTHER_FRAMEWORK_PREFIXES,
)

_BUILTINS = frozenset(dir(builtins))

# Methods that only modules have among callable things (tensors have .to/.cuda but cannot be called).
MODULE_ONLY_METHODS = frozenset({
    "eval", "train", "parameters", "named_parameters", "modules", "named_modules", "children", "named_children",
    "buffers", "named_buffers", "apply", "register_forward_hook", "register_forward_pre_hook", "register_buffer",
    "register_full_backward_hook", "zero_grad", "load_state_dict", "to", "cuda", "half", "requires_grad_",
    "gradient_checkpointing_enable", "add_module", "get_submodule",
})
# How many arguments ``nn.Module``'s own method takes: ``actor.train(states, grads)`` is some other class's
# training step (a TensorFlow actor), not ``Module.train(mode)``.
_MODULE_METHOD_ARITY = {"eval": 0, "train": 1, "zero_grad": 1, "parameters": 1, "modules": 0, "children": 0,
                        "named_children": 0, "cuda": 1, "half": 0}


def _fits_module_method(call: ast.Call) -> bool:
    most = _MODULE_METHOD_ARITY.get(call.func.attr)
    return most is None or len(call.args) + len(call.keywords) <= most


# Of those, the ones no tensor, array or batch has: an element used so (``models[key].eval()``) makes its
# container one of modules, so that calling another element (``models["generator"](z)``) is a forward pass.
_ELEMENT_MODULE_METHODS = frozenset({
    "eval", "train", "parameters", "named_parameters", "modules", "named_modules", "children", "named_children",
    "register_forward_hook", "register_forward_pre_hook", "requires_grad_",
    "add_module", "get_submodule",
})
# Methods that return the module they are called on.
MODULE_CHAIN_METHODS = frozenset({"to", "cuda", "cpu", "eval", "train", "half", "float", "double", "bfloat16", "requires_grad_", "to_empty", "share_memory"})
# torch.nn classes without parameters: calling one only transforms its inputs (a loss, an activation).
_PARAMETER_FREE_NN = frozenset({
    "ReLU", "ReLU6", "GELU", "SiLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Softmax2d", "LeakyReLU", "ELU",
    "SELU", "CELU", "Hardswish", "Hardsigmoid", "Hardtanh", "Mish", "Softplus", "Softsign", "Tanhshrink", "Threshold",
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "Identity", "Flatten", "Unflatten", "Upsample",
    "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "CosineSimilarity",
    "PairwiseDistance", "ZeroPad2d", "ChannelShuffle", "Fold", "Unfold",
})
_PARAMETER_FREE_PREFIXES = ("MaxPool", "AvgPool", "AdaptiveAvgPool", "AdaptiveMaxPool", "LPPool", "FractionalMaxPool", "ConstantPad", "ReflectionPad", "ReplicationPad", "CircularPad", "MaxUnpool")
# Frameworks whose ``Module`` is not torch's.
_FOREIGN_FRAMEWORKS = ("flax", "jax", "haiku", "equinox", "tensorflow", "keras", "mindspore", "paddle", "oneflow", "mlx", "tinygrad", "pydantic", "sklearn")
# torch.nn's own containers: a class of that name imported from another package is that package's
# (``import spiraltorch as st``; ``st.nn.Sequential``), not a torch module.
_TORCH_NN_CONTAINERS = frozenset({"Module", "Sequential", "ModuleList", "ModuleDict"})


def _foreign(name: str, qualified: str, facts: FileFacts) -> bool:
    """``name`` (as written, ``qualified`` through the file's imports) is another framework's class."""
    if qualified.startswith(_FOREIGN_FRAMEWORKS):
        return True
    head = name.split(".", 1)[0]
    return (last_name(name) in _TORCH_NN_CONTAINERS and head in facts.imports
            and not facts.imports[head].startswith("torch") and "." in name)


# Bases that say nothing about being a module (a class deriving only from these is a plain class).
_PLAIN_BASES = frozenset({"object", "ABC", "Generic", "Protocol", "NamedTuple", "Enum", "Exception", "dict", "list", "tuple"})
_MAKES_PARAMETERS = frozenset({"Parameter", "ParameterList", "ParameterDict", "register_parameter", "add_module", "register_module"})
_MODULE_CONTAINERS = frozenset({"ModuleList", "Sequential", "ModuleDict"})


def _frozen_parameter(call: ast.Call) -> bool:
    """``nn.Parameter(w, requires_grad=False)``: a parameter autograd never records (a layer that learns by
    another rule, such as STDP, or a fixed one)."""
    return last_name(call_name(call)) == "Parameter" and any(
        k.arg == "requires_grad" and isinstance(k.value, ast.Constant) and k.value.value is False for k in call.keywords)


def _container_elements(call: ast.Call) -> list[ast.AST] | None:
    """The modules a ``ModuleList([...])``, ``ModuleDict({...})`` or ``Sequential(...)`` call is built from (a
    comprehension's element stands for all of them); None when they cannot be read off the call."""
    if call.keywords:
        return None
    if last_name(call_name(call)) == "Sequential":
        return None if any(isinstance(a, ast.Starred) for a in call.args) else list(call.args)
    if len(call.args) != 1:
        return None
    given = call.args[0]
    if isinstance(given, (ast.List, ast.Tuple)):
        return None if any(isinstance(e, ast.Starred) for e in given.elts) else list(given.elts)
    if isinstance(given, (ast.ListComp, ast.GeneratorExp)):
        return [given.elt]
    if isinstance(given, ast.Dict):
        return None if None in given.keys else list(given.values)
    if isinstance(given, ast.DictComp):
        return [given.value]
    return None


def parameter_free_nn_class(short: str) -> bool:
    return short.endswith("Loss") or short in _PARAMETER_FREE_NN or short.startswith(_PARAMETER_FREE_PREFIXES)


class Evidence:
    """Module-ness of names per scope (functions, classes, the module), built once per file."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.module_classes = _module_classes(facts)
        self.functional_classes: set[str] = set()  # parameter-free torch.nn classes bound under a local name
        self._scope_modules: dict[int, set[str]] = {}  # id(scope) -> local names (or globals) holding modules
        self._class_attrs: dict[str, set[str]] = {}  # class name -> "self.x" names holding modules
        self._no_grad: dict[int, set[str]] = {}  # id(scope) -> names of callables that run without grad
        self._functional: dict[int, set[str]] = {}  # id(scope) -> names bound to parameter-free nn modules
        self.param_modules: dict[int, set[str]] = {}  # id(function) -> parameters callers pass modules to
        self.param_no_grad: dict[int, set[str]] = {}  # id(function) -> parameters callers pass pipelines to
        self._returns_module: dict[int, bool] = {}
        self.frozen: set[str] = set()
        self._locals: dict[int, set[str]] = {}
        # id(scope) -> name a backward call differentiates -> where those backward calls are (line, column)
        self.backward_roots: dict[int, dict[str, list[tuple[int, int]]]] = {}
        self.backward_element_roots: dict[int, dict[str, set[object]]] = {}  # id(scope) -> container -> keys
        self.backward_inputs: dict[int, frozenset[str]] = {}  # id(scope) -> every name a backward's loss is computed from
        self._differentiable: dict[int, set[str]] = {}  # id(scope) -> callables a backpropagated loss is computed by
        self._class_differentiable: dict[str, set[str]] = {}
        # (class, ``self.model.method``) -> which results of that call a backward differentiates: a tuple's
        # positions, or None for the whole result
        self.held_results: dict[tuple[str, str], set[int | None]] = {}
        self.forward_kinds: dict[tuple[int, int], str | None] = {}
        self.abstract_methods: frozenset[str] | None = None  # facts/forwards.py
        self._static: dict[int, dict] = {}
        self._own: dict[str, tuple[bool, list[tuple[ast.Call, ast.AST]]]] = {}  # class -> what _own_parts read
        self._annotations: dict[int, bool] = {}
        self.build()

    # -- building --------------------------------------------------------------------------
    def build(self) -> None:
        """(Re)compute every scope's modules; the call graph calls this again after adding parameter evidence.
        What a scope says about itself alone (annotations, methods called, the backward slice) is read once."""
        facts = self.facts
        self._scope_modules.clear()
        self._class_attrs.clear()
        self.forward_kinds.clear()
        self._returns_module.clear()
        scopes = [facts.tree, *facts.scopes]
        first = not self._static
        if first:
            for scope in scopes:
                self._static[id(scope)] = self._read_scope(scope)
        for _ in range(2):  # a second round lets ``self.model = model`` see what another method found
            for scope in scopes:
                self._scope(scope)
        if first:
            self.frozen = frozen_names(facts)

    def _locals_of(self, scope: ast.AST) -> set[str]:
        key = id(scope)
        names = self._locals.get(key)
        if names is None:
            names = set()
            if not isinstance(scope, ast.Module):
                args = scope.args
                names.update(a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])
                if args.vararg:
                    names.add(args.vararg.arg)
                if args.kwarg:
                    names.add(args.kwarg.arg)
            for store in self.facts.stores_inside(scope):
                targets = store.targets if isinstance(store, ast.Assign) else [getattr(store, "target", None)]
                for target in targets:
                    if target is not None:
                        names.update(n.id for n in iter_nodes(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
            for loop in self.facts.loops_inside(scope):
                if isinstance(loop, (ast.For, ast.AsyncFor)):
                    names.update(n.id for n in iter_nodes(loop.target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
            self._locals[key] = names
        return names

    def _read_scope(self, scope: ast.AST) -> dict:
        """What a scope says about module-ness by itself: computed once per file."""
        facts = self.facts
        cls = facts.class_of(scope) if not isinstance(scope, ast.Module) else None
        annotated: set[str] = set()
        if not isinstance(scope, ast.Module):
            for arg in [*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs]:
                if arg.annotation is not None and self._module_annotation(arg.annotation):
                    annotated.add(arg.arg)
        bindings = []
        for store in facts.stores_inside(scope):
            if isinstance(store, (ast.Assign, ast.AnnAssign)) and store.value is not None:
                targets = store.targets if isinstance(store, ast.Assign) else [store.target]
                bindings.extend((target, store.value) for target in targets)
        loops = [loop for loop in facts.loops_inside(scope) if isinstance(loop, (ast.For, ast.AsyncFor))]
        pipelines: set[str] = set()
        used: list[str] = []
        for call in facts.calls_inside(scope):
            func = call.func
            if type(func) is not ast.Attribute:
                continue
            if func.attr in PIPELINE_METHODS and isinstance(func.value, ast.Name):
                pipelines.add(func.value.id)
            elif func.attr in MODULE_ONLY_METHODS and _fits_module_method(call):
                receiver = dotted(func.value)
                if receiver:
                    used.append(receiver)
                elif func.attr in _ELEMENT_MODULE_METHODS and type(func.value) is ast.Subscript:
                    container = dotted(func.value.value)
                    if container:
                        used.append(container)
        class_annotated: set[str] = set()
        if cls is not None:
            for item in cls.body:  # ``encoder: nn.Module`` in the class body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and self._module_annotation(item.annotation):
                    class_annotated.add(f"self.{item.target.id}")
        differentiable: set[str] = self._differentiable.setdefault(id(scope), set())
        class_differentiable = self._class_differentiable.setdefault(cls.name, set()) if cls is not None else None
        self._backward_slice(scope, differentiable, class_differentiable)
        return {"cls": cls, "annotated": annotated, "bindings": bindings, "loops": loops, "pipelines": pipelines,
                "used": used, "class_annotated": class_annotated}

    def _scope(self, scope: ast.AST) -> None:
        key = id(scope)
        static = self._static[key]
        modules = self._scope_modules.setdefault(key, set())
        no_grad = self._no_grad.setdefault(key, set())
        functional = self._functional.setdefault(key, set())
        cls = static["cls"]
        if not isinstance(scope, ast.Module):
            modules |= self.param_modules.get(key, set())
            no_grad |= self.param_no_grad.get(key, set())
            modules |= static["annotated"]
        no_grad |= static["pipelines"]  # pipelines first: they have .to() too
        attrs = self._class_attrs.setdefault(cls.name, set()) if cls is not None else None
        for target, value in static["bindings"]:
            self._bind(target, value, scope, modules, attrs, no_grad, functional)
        for loop in static["loops"]:
            if isinstance(loop.iter, (ast.List, ast.Tuple)) and loop.iter.elts:
                self._bind_literal_loop(loop.target, loop.iter.elts, scope, modules, functional)
            elif self._iterates_modules(loop.iter, scope):
                target = loop.target
                if isinstance(target, ast.Tuple) and target.elts:
                    target = target.elts[-1]  # ``for name, module in model.named_modules()``
                if isinstance(target, ast.Name):
                    modules.add(target.id)
                    container = _iterated(loop.iter)
                    if container is not None and (container in functional or self.is_functional(container, scope)):
                        functional.add(target.id)  # ``for layer in self.layers`` of layers that record nothing
        modules -= static["pipelines"]
        for receiver in static["used"]:
            self._note_use(receiver, scope, modules, attrs)
        if attrs is not None:
            attrs |= static["class_annotated"]

    def _bind_literal_loop(self, target: ast.AST, elements: list[ast.AST], scope: ast.AST, modules: set[str],
                           functional: set[str]) -> None:
        """``for name, layer in [("drop", nn.Dropout()), ("relu", nn.ReLU())]``: the target holds a module when every
        element puts one there, and one that records nothing of its own when none of them makes parameters."""
        if isinstance(target, (ast.Tuple, ast.List)):
            for index, part in enumerate(target.elts):
                values = [_element(e, index, len(target.elts)) for e in elements]
                if None not in values:
                    self._bind_literal_loop(part, values, scope, modules, functional)
            return
        if not isinstance(target, ast.Name) or not all(self.is_module(v, scope) for v in elements):
            return
        modules.add(target.id)
        if all(self.records_nothing(v, scope) for v in elements):
            functional.add(target.id)

    def _backward_slice(self, scope: ast.AST, modules: set[str], attrs: set[str] | None) -> None:
        """A loss that is backpropagated carries graph, and whatever was called to compute it is
        differentiable: ``preds = model(x); loss = loss_fn(preds, y); loss.backward()`` makes ``model``
        and ``loss_fn`` modules of this scope, however they are named."""
        facts = self.facts
        roots: dict[str, list[tuple[int, int]]] = {}
        element_roots: dict[str, set[object]] = {}

        def consumed(names: set[str], node: ast.AST) -> None:
            for name in names:
                roots.setdefault(name.removesuffix(ELEMENT), []).append((node.lineno, node.col_offset))

        for call in facts.calls_inside(scope):
            if is_backward_call(call):
                for target in backward_targets(call):
                    consumed(names_read(target), call)
                    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) and dotted(target.value):
                        element_roots.setdefault(dotted(target.value), set()).add(target.slice.value)
        if element_roots:
            self.backward_element_roots[id(scope)] = element_roots
        if getattr(scope, "name", None) in BACKPROPAGATED_RETURNS:
            for node in iter_nodes(scope):  # the framework backpropagates what a training step returns
                if isinstance(node, ast.Return) and node.value is not None:
                    consumed(names_read(returned_loss(node.value)), node)
        if not roots:
            return
        stores = [s for s in facts.stores_inside(scope) if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and s.value is not None]
        # What is put into a container that is backpropagated is backpropagated too: ``log = {"loss": loss};
        # return log``, ``losses[i] = loss; losses[i - 1].backward()``, ``parts.append(loss); sum(parts).backward()``.
        puts: list[tuple[set[str], ast.AST]] = []
        for store in stores:
            value = store.value
            targets = store.targets if isinstance(store, ast.Assign) else [store.target]
            literal = isinstance(value, (ast.Dict, ast.List, ast.Tuple)) or (isinstance(value, ast.Call) and call_name(value) == "dict")
            if literal:
                puts.append(({n for t in targets for n in stored_names(t)}, value))
            elif any(isinstance(t, ast.Subscript) for t in targets):
                puts.append(({n for t in targets if isinstance(t, ast.Subscript) for n in stored_names(t)}, value))
        for call in facts.calls_inside(scope):
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in {"append", "extend", "insert", "appendleft"} and dotted(func.value):
                for arg in call.args:
                    puts.append(({dotted(func.value)}, arg))
        for _ in range(3):
            grown = False
            for containers, value in puts:
                containers = containers & roots.keys()
                inner = {n.removesuffix(ELEMENT) for n in names_read(value)} - roots.keys()
                if containers and inner:
                    where = [p for c in containers for p in roots[c]]
                    for name in inner:
                        roots[name] = list(where)
                    grown = True
            if not grown:
                break
        self.backward_roots[id(scope)] = roots
        wanted = set(roots)
        edges = [(store, stored, read) for store in stores for stored, read in assignment_edges(store)]
        producers = _grow(wanted, edges, lambda stored, found: stored & found)
        inputs = set(wanted)  # through stores into attributes too: ``args.values = torch.cat(values)``; ``loss_fn(args)``
        _grow(inputs, edges, _into_an_attribute)
        self.backward_inputs[id(scope)] = frozenset(inputs)
        local_functions = set(facts.functions) | set(facts.classes) | {f.name for f in facts.nested.get(id(scope), ())}
        for store in producers:
            for call in facts.calls_of(store):
                func = call.func
                if isinstance(func, ast.Name):
                    name = func.id
                    if name in local_functions or name in facts.imports or name in _BUILTINS or name in self.module_classes:
                        continue
                    if name in self._locals_of(scope):
                        modules.add(name)
                    elif name in facts.globals:
                        self._differentiable.setdefault(id(facts.tree), set()).add(name)
                elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
                    if attrs is not None and (self.facts.class_of(scope) is None or (self.facts.class_of(scope).name, func.attr) not in facts.methods):
                        attrs.add(f"self.{func.attr}")
                elif attrs is not None and _held_object_method(func):
                    # ``_, loss = self.model.get_labels_and_loss(batch); loss.backward()``: the object's own
                    # model computes a loss with its graph wherever the class calls that method
                    name = dotted(func)
                    cls = self.facts.class_of(scope) or self.facts.enclosing_class(scope)
                    if cls is not None:
                        held = self.held_results.setdefault((cls.name, name), set())
                        held |= _backpropagated_positions(store, call, wanted)

    def _note_use(self, receiver: str, scope: ast.AST, modules: set[str], attrs: set[str] | None) -> None:
        if "." not in receiver and (self.is_no_grad_callable_name(receiver, scope) or receiver in self._no_grad.get(id(scope), ())):
            return  # a pipeline has .to() too
        if receiver.startswith("self."):
            if attrs is not None and receiver.count(".") == 1:
                attrs.add(receiver)
        elif "." not in receiver:
            if receiver in self._locals_of(scope) or isinstance(scope, ast.Module):
                modules.add(receiver)
            elif receiver in self.facts.globals:
                self._scope_modules.setdefault(id(self.facts.tree), set()).add(receiver)

    def _bind(self, target: ast.AST, value: ast.AST, scope: ast.AST, modules: set[str], attrs: set[str] | None,
              no_grad: set[str], functional: set[str]) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for index, element in enumerate(target.elts):
                part = _element(value, index, len(target.elts))
                if part is not None:
                    self._bind(element, part, scope, modules, attrs, no_grad, functional)
            return
        name = dotted(target)
        if name is None:
            return
        if self._no_grad_callable(value, scope):
            if "." not in name:
                no_grad.add(name)
            return
        if "." not in name and name in no_grad:
            return  # shown to be a pipeline by the methods called on it
        if not self.is_module(value, scope):
            return
        if self.records_nothing(value, scope):
            functional.add(name)
        if "." not in name:
            modules.add(name)
        elif name.startswith("self.") and name.count(".") == 1 and attrs is not None:
            attrs.add(name)

    # -- questions -------------------------------------------------------------------------
    def is_module_name(self, name: str, scope: ast.AST) -> bool:
        """``name`` (plain or ``self.x``) holds a module in ``scope``."""
        if name.startswith("self."):
            head, _, rest = name.partition(".")
            cls = self.facts.enclosing_class(scope)
            if cls is None:
                return False
            attr = f"self.{rest.split('.', 1)[0]}"
            if "." in rest:
                return attr in self._class_modules(cls) and rest.endswith(".module")
            return attr in self._class_modules(cls)
        if "." in name:
            head, _, rest = name.rpartition(".")
            return rest == "module" and self.is_module_name(head, scope)  # ``model.module`` inside DataParallel
        current = scope
        while current is not None:
            if name in self._scope_modules.get(id(current), ()):
                return True
            if not isinstance(current, ast.Module) and name in self._locals_of(current):
                return False
            current = self._enclosing(current)
        return False

    def _enclosing(self, scope: ast.AST) -> ast.AST | None:
        if isinstance(scope, ast.Module):
            return None
        return self.facts.parent.get(id(scope)) or self.facts.tree

    def _class_modules(self, cls: ast.ClassDef) -> set[str]:
        found = set(self._class_attrs.get(cls.name, ()))
        for base in cls.bases:
            local = self.facts.classes.get(last_name(dotted(base) or ""))
            if local is not None and local is not cls:
                found |= self._class_attrs.get(local.name, set())
        return found

    def held_result_backpropagated(self, name: str, scope: ast.AST, position: int | None = None) -> bool:
        """``self.model.get_labels_and_loss(...)`` (at ``position`` of the tuple it returns): a method of an object
        this class holds whose result (there) some method of the class backpropagates, so it carries graph."""
        cls = self.facts.enclosing_class(scope)
        if cls is None or not name.startswith("self."):
            return False
        positions = self.held_results.get((cls.name, name), ())
        return None in positions or (position is not None and position in positions)

    def is_differentiable_name(self, name: str, scope: ast.AST) -> bool:
        """Called to compute a loss that is backpropagated (so a network or a loss, whatever its name)."""
        if name.startswith("self."):
            cls = self.facts.enclosing_class(scope)
            return cls is not None and name in self._class_differentiable.get(cls.name, ())
        current = scope
        while current is not None:
            if name in self._differentiable.get(id(current), ()):
                return True
            if not isinstance(current, ast.Module) and name in self._locals_of(current):
                return False
            current = self._enclosing(current)
        return False

    def is_module_class_name(self, name: str) -> bool:
        return last_name(name) in self.module_classes

    def is_frozen(self, name: str) -> bool:
        return name in self.frozen

    def is_functional(self, name: str, scope: ast.AST) -> bool:
        """Bound to a module whose forward records nothing of its own (``criterion = nn.CrossEntropyLoss()``,
        ``self.layers = nn.ModuleList([...])`` of layers with frozen parameters only)."""
        if name.startswith("self.") and name.count(".") == 1:
            cls = self.facts.enclosing_class(scope)
            return cls is not None and name in self._class_functional(cls)
        current = scope
        while current is not None:
            if name in self._functional.get(id(current), ()):
                return True
            if not isinstance(current, ast.Module) and name in self._locals_of(current):
                return False
            current = self._enclosing(current)
        return False

    def is_no_grad_callable_name(self, name: str, scope: ast.AST) -> bool:
        current = scope
        while current is not None:
            if name in self._no_grad.get(id(current), ()):
                return True
            if not isinstance(current, ast.Module) and name in self._locals_of(current):
                return False
            current = self._enclosing(current)
        return False

    def is_no_grad_callable(self, expr: ast.AST, scope: ast.AST) -> bool:
        """``expr`` is a pipeline-like callable that runs its model under no_grad itself."""
        expr = _unwrap_chain(expr)
        if isinstance(expr, ast.Name):
            return self.is_no_grad_callable_name(expr.id, scope)
        return self._no_grad_callable(expr, scope)

    def is_module(self, expr: ast.AST, scope: ast.AST) -> bool:
        """``expr`` evaluates to an nn.Module (by the evidence of this file)."""
        expr = _unwrap_chain(expr)
        kind = type(expr)
        if kind is ast.Name or kind is ast.Attribute:
            name = dotted(expr)
            return bool(name) and self.is_module_name(name, scope)
        if kind is ast.Subscript:
            return self.is_module(expr.value, scope)  # an element of a ModuleList / ModuleDict / Sequential
        if kind is ast.IfExp:
            return self.is_module(expr.body, scope) or self.is_module(expr.orelse, scope)
        if kind is not ast.Call:
            return False
        return self._constructs_module(expr, scope)

    def _constructs_module(self, call: ast.Call, scope: ast.AST) -> bool:
        name = call_name(call)
        short = last_name(name)
        if not name:
            return False
        if short in self.module_classes and (name == short or self.facts.imports.get(name.split(".", 1)[0]) is None):
            return True
        project = self.facts.project
        if project is not None and name in project.module_classes:
            return True  # a module class of another file of the project
        if self.torch_nn_class(name) is not None:
            return True
        if short == "from_pretrained":
            owner = last_name(name.rsplit(".", 1)[0]) if "." in name else ""
            return (any(w in owner for w in PRETRAINED_MODEL_OWNER_WORDS) and not any(w in owner for w in PRETRAINED_NOT_MODEL_OWNER_WORDS)
                    and not owner.startswith(PRETRAINED_OTHER_FRAMEWORK_PREFIXES))
        if short in MODULE_FACTORIES:
            if short in TORCH_ONLY_FACTORIES and not self._qualified(name).startswith("torch."):
                return False  # ``torchlens.trace(model, x)`` hands back a log of the run, not a module
            if short in MODULE_PASS_THROUGH and short not in {"DistributedDataParallel", "DataParallel", "FullyShardedDataParallel", "FSDP", "DDP", "AveragedModel", "ModelEma", "ModelEmaV2", "ModelEmaV3", "get_peft_model", "PeftModel"}:
                return bool(call.args) and self.is_module(call.args[0], scope)
            return True
        if short in {"prepare", "prepare_model", "setup", "setup_module"} and len(call.args) == 1:
            return self.is_module(call.args[0], scope)  # accelerator.prepare(model), fabric.setup(model)
        qualified = self._qualified(name)
        if short[:1].islower() and qualified.startswith(MODULE_FACTORY_PREFIXES + ("torchvision.models", "timm.")):
            return not short.startswith(("get_", "list_", "load_state", "is_"))
        local = self.facts.functions.get(name) if "." not in name else None
        if local is not None:
            return self.returns_module(local)
        return False

    def _qualified(self, name: str) -> str:
        head, dot, rest = name.partition(".")
        imported = self.facts.imports.get(head)
        return f"{imported}{dot}{rest}" if imported else name

    def torch_nn_class(self, name: str) -> str | None:
        """``nn.Linear`` / ``torch.nn.Linear`` / ``Linear`` imported from torch.nn -> "Linear"; else None."""
        short = last_name(name)
        if not short[:1].isupper() or short in {"Parameter", "ParameterList", "ParameterDict", "Buffer"}:
            return None
        qualified = self._qualified(name)
        if qualified.startswith("torch.nn.") and not qualified.startswith(("torch.nn.functional", "torch.nn.init", "torch.nn.utils.")):
            return short
        if name.startswith("nn.") and "nn" not in self.facts.imports and name.count(".") == 1:
            return short  # ``nn`` used without a visible import: the usual alias
        return None

    def wraps_frozen(self, value: ast.AST, scope: ast.AST) -> bool:
        """``NMSModel(model, args)`` where ``model`` is frozen and the class (of this file) makes no parameters
        of its own: the wrapper's forward records no graph of its own either."""
        value = _unwrap_chain(value)
        if not isinstance(value, ast.Call):
            return False
        cls = self.facts.classes.get(call_name(value))
        if cls is None or not self._makes_no_parameters(cls):
            return False
        wrapped = [_unwrap_chain(a) for a in [*value.args, *(k.value for k in value.keywords)] if self.is_module(a, scope)]
        return bool(wrapped) and all(isinstance(m, (ast.Name, ast.Attribute)) and self.is_frozen(dotted(m) or "") for m in wrapped)

    def _makes_no_parameters(self, cls: ast.ClassDef, depth: int = 0) -> bool:
        """A module class of this file (and its bases) that creates no parameter or submodule: it only holds
        what it is given."""
        key = ("no-parameters", cls.name)
        known = self._returns_module.get(key)
        if known is not None:
            return known
        self._returns_module[key] = False  # recursion guard
        known = depth < 8
        for base in cls.bases:
            name = dotted(base) or ""
            local = self.facts.classes.get(last_name(name))
            if local is not None and local is not cls:
                known = known and self._makes_no_parameters(local, depth + 1)
            elif self.torch_nn_class(name) != "Module":
                known = False  # a base this file cannot see may make parameters
        if known:
            makes_parameters, constructed = self._own_parts(cls)
            known = not makes_parameters and not any(self.is_module(value, method) for value, method in constructed)
        self._returns_module[key] = known  # False too for a submodule of its own
        return known

    def records_nothing(self, value: ast.AST, scope: ast.AST) -> bool:
        """``value`` builds a module whose forward records no graph of its own: a parameter-free torch.nn class, a
        wrapper of a frozen model, a class of this file or of the project whose only parameters are made frozen
        and that is given no module, or a ModuleList / ModuleDict / Sequential of those."""
        value = _unwrap_chain(value)
        if not isinstance(value, ast.Call):
            return False
        if self._parameter_free(value) or self.wraps_frozen(value, scope):
            return True
        name = call_name(value)
        if self.torch_nn_class(name) in _MODULE_CONTAINERS:
            elements = _container_elements(value)
            return bool(elements) and all(self.records_nothing(e, scope) for e in elements)
        local = self.facts.classes.get(name) if "." not in name else None
        project = self.facts.project
        frozen = self.frozen_layer(local) if local is not None else project is not None and name in project.frozen_classes
        # ... and it is handed no module, whose parameters it would run
        return frozen and not any(self.is_module(a, scope) for a in [*value.args, *(k.value for k in value.keywords)])

    def frozen_layer(self, cls: ast.ClassDef) -> bool:
        """A module class of this file whose parameters are all made frozen (``nn.Parameter(w,
        requires_grad=False)``), at least one, and that makes no other parameter nor submodule."""
        return self._makes_no_parameters(cls) and self._makes_frozen_parameters(cls)

    def _makes_frozen_parameters(self, cls: ast.ClassDef, depth: int = 0) -> bool:
        methods = [m for (owner, _), m in self.facts.methods.items() if owner == cls.name]
        if any(_frozen_parameter(c) for m in methods for c in self.facts.calls_within_all(m)):
            return True
        for base in cls.bases:
            local = self.facts.classes.get(last_name(dotted(base) or ""))
            if local is not None and local is not cls and depth < 8 and self._makes_frozen_parameters(local, depth + 1):
                return True
        return False

    def _class_functional(self, cls: ast.ClassDef) -> frozenset[str]:
        """``self.x`` attributes every assignment of which, in the class's methods, builds a module that records
        nothing of its own."""
        key = ("class-functional", cls.name)
        known = self._returns_module.get(key)
        if known is None:
            self._returns_module[key] = frozenset()  # recursion guard
            values: dict[str, list[tuple[ast.AST, ast.AST]]] = {}
            for (owner, _), method in self.facts.methods.items():
                if owner != cls.name:
                    continue
                for store in self.facts.stores_within_all(method):
                    if isinstance(store, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                        targets = store.targets if isinstance(store, ast.Assign) else [store.target]
                        for target in targets:
                            name = dotted(target)
                            if name and name.startswith("self.") and name.count(".") == 1:
                                values.setdefault(name, []).append((store, method))
            known = frozenset(name for name, stores in values.items()
                              if all(isinstance(s, ast.Assign) and len(s.targets) == 1 and self.records_nothing(s.value, m)
                                     for s, m in stores))
            self._returns_module[key] = known
        return known

    def _own_parts(self, cls: ast.ClassDef) -> tuple[bool, list[tuple[ast.Call, ast.AST]]]:
        """Whether the class's methods create a parameter autograd records or register a module, and the calls
        they assign to ``self.`` attributes (with the method): read once, whatever the evidence says of them."""
        known = self._own.get(cls.name)
        if known is None:
            methods = [m for (owner, _), m in self.facts.methods.items() if owner == cls.name]
            makes = any(last_name(call_name(c)) in _MAKES_PARAMETERS and not _frozen_parameter(c)
                        for m in methods for c in self.facts.calls_within_all(m))
            constructed = [(store.value, m) for m in methods for store in self.facts.stores_within_all(m)
                           if isinstance(store, ast.Assign) and isinstance(store.value, ast.Call)
                           and any((dotted(t) or "").startswith("self.") for t in store.targets)]
            known = self._own[cls.name] = (makes, constructed)
        return known

    def _parameter_free(self, value: ast.AST) -> bool:
        value = _unwrap_chain(value)
        if not isinstance(value, ast.Call):
            return False
        short = self.torch_nn_class(call_name(value))
        return short is not None and parameter_free_nn_class(short)

    def returns_module(self, func: ast.AST) -> bool:
        """A function of this file that builds and returns a module (``def get_model(): return Net()``)."""
        key = id(func)
        known = self._returns_module.get(key)
        if known is None:
            self._returns_module[key] = False  # recursion guard
            known = any(self.is_module(node.value, func) for node in own_returns(func))
            self._returns_module[key] = known
        return known

    def _no_grad_callable(self, value: ast.AST, scope: ast.AST) -> bool:
        value = _unwrap_chain(value)
        if not isinstance(value, ast.Call):
            return False
        name = call_name(value)
        short = last_name(name)
        if short in NO_GRAD_CALLABLE_CONSTRUCTORS:
            return True
        project = self.facts.project
        if project is not None and name in project.no_grad_classes:
            return True  # a class of another file of the project whose forward runs without grad
        local = self.facts.functions.get(name) if "." not in name else None
        if local is None and name.startswith("self."):
            cls = self.facts.enclosing_class(scope)
            local = self.facts.methods.get((cls.name, name[5:])) if cls is not None and name.count(".") == 1 else None
        if local is not None:
            return self._returns_no_grad_callable(local)
        if short == "from_pretrained":
            owner = last_name(name.rsplit(".", 1)[0]) if "." in name else ""
            return owner.endswith(NO_GRAD_CALLABLE_SUFFIXES) or "Pipeline" in owner
        return short.endswith(NO_GRAD_CALLABLE_SUFFIXES) and short[:1].isupper()

    def _returns_no_grad_callable(self, func: ast.AST) -> bool:
        key = ("no-grad", id(func))
        known = self._returns_module.get(key)
        if known is None:
            self._returns_module[key] = False  # recursion guard
            known = any(isinstance(node.value, ast.Name) and self.is_no_grad_callable_name(node.value.id, func)
                        for node in own_returns(func))
            self._returns_module[key] = known
        return known

    def _iterates_modules(self, iterable: ast.AST, scope: ast.AST) -> bool:
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute):
            if iterable.func.attr in {"modules", "children", "named_modules", "named_children"}:
                return True
            if iterable.func.attr == "values" and self.is_module(iterable.func.value, scope):
                return True
        if isinstance(iterable, ast.Call) and last_name(call_name(iterable)) in {"enumerate", "reversed"} and iterable.args:
            return self._iterates_modules(iterable.args[0], scope)
        return self.is_module(iterable, scope)

    def _module_annotation(self, annotation: ast.AST) -> bool:
        """``nn.Module``, ``Optional[MyNet]``: an instance of a module (``Type[nn.Module]`` is a class)."""
        key = id(annotation)
        known = self._annotations.get(key)
        if known is None:
            known = self._annotations[key] = self._is_module_annotation(annotation)
        return known

    def _is_module_annotation(self, annotation: ast.AST) -> bool:
        for node in iter_nodes(annotation):
            if isinstance(node, ast.Subscript) and last_name(dotted(node.value) or "") in {"Type", "type", "Callable"}:
                return False
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and ("Type[" in node.value or "Callable" in node.value):
                return False
        for node in iter_nodes(annotation):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                if any(text.endswith(base) or f"{base}]" in text for base in MODULE_BASES):
                    return True
            name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
            if name and (last_name(name) in MODULE_BASES or last_name(name) in self.module_classes):
                if not _foreign(name, self._qualified(name), self.facts):
                    return True
        return False


# Methods that hand back what an object holds or manage it, rather than compute from their arguments.
_HOLDER_METHODS = MODULE_CHAIN_METHODS | {
    "pop", "get", "popleft", "popitem", "setdefault", "values", "items", "keys", "copy", "gather", "reduce",
    "all_reduce", "scale", "unscale_", "item", "mean", "sum", "clone", "contiguous", "view", "reshape",
}


def _grow(found: set[str], edges: list, matches) -> list[ast.stmt]:
    """Grow ``found`` by what the stores ``matches`` accepts read, to a fixed point (six rounds at most); the
    stores accepted, in the order first accepted."""
    accepted: list[ast.stmt] = []
    for _ in range(6):
        grown = False
        for store, stored, read in edges:
            if matches(stored, found):
                if store not in accepted:
                    accepted.append(store)
                read = {n.removesuffix(ELEMENT) for n in read}
                if not read <= found:
                    found |= read
                    grown = True
        if not grown:
            break
    return accepted


def _into_an_attribute(stored: set[str], found: set[str]) -> bool:
    """A store into what ``found`` holds or into one of its attributes (not ``self``'s: a method reads those)."""
    return any(name in found or (name.partition(".")[0] in found and not name.startswith("self.")) for name in stored)


def _held_object_method(func: ast.AST) -> bool:
    """``self.model.get_labels_and_loss``: a method of an object the class holds (``self.<attribute>``), not one
    that only returns or moves what that object already holds."""
    if not isinstance(func, ast.Attribute):
        return False
    receiver = dotted(func.value)
    return bool(receiver) and receiver.startswith("self.") and receiver.count(".") == 1 \
        and func.attr not in _HOLDER_METHODS and not func.attr.startswith("__")


def _backpropagated_positions(store: ast.stmt, call: ast.Call, wanted: set[str]) -> set[int | None]:
    """What of ``call``'s result the backward reads: the positions of ``_, loss = call`` whose names it
    differentiates, or None (the whole result) when the call's value is used otherwise."""
    targets = store.targets if isinstance(store, ast.Assign) else [store.target]
    if store.value is call and len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List)):
        elements = targets[0].elts
        if not any(isinstance(e, ast.Starred) for e in elements):
            return {i for i, element in enumerate(elements) if stored_names(element) & wanted}
    return {None}


def returned_loss(value: ast.AST) -> ast.AST:
    """The part of a training step's result that the framework backpropagates: the first of a tuple
    (``return (loss, outputs)``), the ``"loss"`` of a dict literal, else the whole value."""
    if isinstance(value, ast.Tuple) and value.elts:
        return value.elts[0]
    if isinstance(value, ast.Dict):
        for key, item in zip(value.keys, value.values):
            if isinstance(key, ast.Constant) and key.value == "loss":
                return item
    return value


def _unwrap_chain(value: ast.AST) -> ast.AST:
    """``Net().to(device).eval()`` -> ``Net()``."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in MODULE_CHAIN_METHODS
    ):
        value = value.func.value
    return value


def _iterated(iterable: ast.AST) -> str | None:
    """The container a loop walks: ``self.layers`` in ``for i, layer in enumerate(self.layers)``."""
    while isinstance(iterable, ast.Call) and last_name(call_name(iterable)) in {"enumerate", "reversed"} and iterable.args:
        iterable = iterable.args[0]
    return dotted(iterable)


def _element(value: ast.AST, index: int, count: int) -> ast.AST | None:
    """The part of ``value`` that the index-th of ``count`` unpacking targets receives, when it is visible."""
    if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == count:
        return value.elts[index]
    if isinstance(value, ast.Call) and last_name(call_name(value)) in {"prepare", "setup"} and len(value.args) == count:
        return value.args[index]  # accelerator.prepare(model, optimizer, loader) returns them in order
    return None


def _module_classes(facts: FileFacts) -> set[str]:
    """Classes of this file that are nn.Modules: by their bases (torch's or a library's, or another module
    class of the file) or by defining ``forward(self, ...)``."""
    found: set[str] = set()
    classes = facts.classes
    changed = True
    while changed:
        changed = False
        for name, cls in classes.items():
            if name in found:
                continue
            if _is_module_class(cls, found, facts):
                found.add(name)
                changed = True
    return found


def _is_module_class(cls: ast.ClassDef, known: set[str], facts: FileFacts) -> bool:
    for base in cls.bases:
        name = dotted(base) or ""
        short = last_name(name)
        if short in known:
            return True
        head = name.split(".", 1)[0]
        qualified = facts.imports.get(head, "")
        if _foreign(name, qualified, facts):
            continue
        if short in MODULE_BASES:
            return True
    for qualified in project_ancestors(cls, facts):  # a base class of another file of the project is a module
        if last_name(qualified) in MODULE_BASES and not qualified.startswith(_FOREIGN_FRAMEWORKS):
            return True
    if any(last_name(dotted(b) or "") == "Function" for b in cls.bases):
        return False  # torch.autograd.Function has a static forward(ctx, ...)
    bases = [last_name(dotted(b) or "") for b in cls.bases]
    if not [b for b in bases if b not in _PLAIN_BASES and b not in facts.classes]:
        return False  # a plain class (``class NeuralNet(object)``) may well have a method named forward
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == "forward":
            args = item.args.posonlyargs + item.args.args
            is_static = any(last_name(dotted(d) or "") == "staticmethod" for d in item.decorator_list)
            if args and args[0].arg == "self" and not is_static:
                return not any(facts.imports.get((dotted(b) or "").split(".", 1)[0], "").startswith(_FOREIGN_FRAMEWORKS) for b in cls.bases)
    return False
