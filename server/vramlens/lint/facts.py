"""File-wide facts gathered in one pass before the rules run: models, functions, imports."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .gradmode import decorated_without_grad, module_disables_grad
from .syntax import CHILD_FIELDS, call_name, dotted, is_backward_call, is_module_class, is_optimizer_step, last_name, method_name

_CONSTRUCTOR_PREFIXES = ("build_", "create_", "make_", "get_", "load_", "init_", "instantiate")
_MODULE_CHAIN_METHODS = {"to", "cuda", "cpu", "eval", "train", "half", "float", "double", "bfloat16", "requires_grad_"}


@dataclass
class FileFacts:
    module_names: set[str] = field(default_factory=set)  # names and self.attrs bound to nn.Modules
    module_classes: set[str] = field(default_factory=set)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)  # module-level defs
    methods: dict[tuple[str, str], ast.FunctionDef] = field(default_factory=dict)  # (class, name) -> def
    globals: set[str] = field(default_factory=set)  # names bound at module level
    torch_alias: str | None = None  # name under which ``torch`` is imported, if it is
    imported_names: dict[str, str] = field(default_factory=dict)  # local name -> torch.<name>
    future_import_end: int = 0  # last line of the docstring / __future__ imports
    grad_off_everywhere: bool = False
    own_calls: dict[int, list[ast.Call]] = field(default_factory=dict)  # id(stmt) -> calls in its own expressions
    calls_within: dict[int, list[ast.Call]] = field(default_factory=dict)  # id(stmt or scope) -> every call inside
    stores_within: dict[int, list[ast.stmt]] = field(default_factory=dict)  # id(stmt or scope) -> assignments inside
    all_calls: list[ast.Call] = field(default_factory=list)  # the whole file, nested definitions included
    all_stores: list[ast.stmt] = field(default_factory=list)
    _trains: dict[int, bool] = field(default_factory=dict)
    _training_calls: set[int] | None = None  # id() of every backward / autograd.grad / optimizer step call
    _grad_off_callees: set[str] | None = None
    _training_callees: set[str] | None = None

    def calls_of(self, stmt: ast.AST) -> list[ast.Call]:
        return self.own_calls.get(id(stmt), [])

    def calls_inside(self, node: ast.AST) -> list[ast.Call]:
        """Every call in ``node`` (a statement, function or module), nested definitions excluded."""
        return self.calls_within.get(id(node), [])

    def called_only_without_grad(self, name: str) -> bool:
        """Called from a @no_grad function of this file and from no training code (``generate`` -> ``_sample``)."""
        if self._grad_off_callees is None:
            self._grad_off_callees, self._training_callees = set(), set()
            for func in [*self.functions.values(), *self.methods.values()]:
                if decorated_without_grad(func):
                    self._grad_off_callees.update(method_name(call) for call in self.calls_inside(func))
                elif self.trains(func):
                    self._training_callees.update(method_name(call) for call in self.calls_inside(func))
        return name in self._grad_off_callees and name not in self._training_callees

    def stores_inside(self, node: ast.AST) -> list[ast.stmt]:
        """Assignments and deletions in ``node``, nested definitions excluded."""
        return self.stores_within.get(id(node), [])

    def trains(self, node: ast.AST) -> bool:
        """A backward pass, autograd.grad or an optimizer step happens inside ``node``."""
        key = id(node)
        known = self._trains.get(key)
        if known is None:
            if self._training_calls is None:  # classify each call once, not once per enclosing block
                self._training_calls = {id(c) for c in self.all_calls if is_backward_call(c) or is_optimizer_step(c)}
            training = self._training_calls
            known = self._trains[key] = bool(training) and any(id(c) in training for c in self.calls_inside(node))
        return known


def _unwrap_module_chain(value: ast.AST) -> ast.AST:
    """``Net().to(device).eval()`` -> ``Net()``."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in _MODULE_CHAIN_METHODS
    ):
        value = value.func.value
    return value


def constructs_module(value: ast.AST, facts: FileFacts) -> bool:
    value = _unwrap_module_chain(value)
    if isinstance(value, ast.Name):
        return value.id in facts.module_names
    if not isinstance(value, ast.Call):
        return False
    name = call_name(value)
    short = last_name(name)
    if name.startswith(("nn.", "torch.nn.")) and short[:1].isupper():
        return True
    if short == "from_pretrained":
        # AutoModelForCausalLM.from_pretrained, not AutoTokenizer / GenerationConfig.from_pretrained
        owner = name.rsplit(".", 1)[0]
        return "Model" in owner or "For" in owner or owner.endswith(("Net", "Pipeline"))
    if short == "deepcopy":
        return any(isinstance(arg, ast.Name) and arg.id in facts.module_names for arg in value.args)
    if short in facts.module_classes or short == "create_model":
        return True
    if ".models." in f".{name}" and short[:1].islower():
        return True  # torchvision.models.resnet50(), models.vgg16()
    return short.startswith(_CONSTRUCTOR_PREFIXES) and ("model" in short or "net" in short)


def _store_targets(node: ast.AST) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [name for target in targets if (name := dotted(target))]


_NESTED_BODIES = ("body", "orelse", "finalbody")
_STORES = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete)
_SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _header_roots(stmt: ast.stmt) -> list[ast.AST]:
    """The expressions that belong to the statement itself rather than to the statements nested in it."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, (ast.While, ast.If)):
        return [stmt.test]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in stmt.items]
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return list(stmt.decorator_list)
    if isinstance(stmt, ast.Try) or type(stmt).__name__ in {"TryStar", "Match"}:
        return []
    return [stmt]


# Leaves and markers that never contain a call; skipping them halves the cost of the walk.
_NO_CALLS_INSIDE = (ast.Name, ast.Constant, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.Lambda)
# Node class -> fields to search for calls; leaves and lambdas get none.
_SEARCHED_FIELDS = {cls: fields for cls, fields in CHILD_FIELDS.items() if not issubclass(cls, _NO_CALLS_INSIDE)}


def _calls_in(root: ast.AST, found: list[ast.Call]) -> None:
    """Calls inside ``root`` (lambdas excluded), depth first; the order is the one the rules rely on."""
    fields_of = _SEARCHED_FIELDS
    call, attribute = ast.Call, ast.Attribute
    stack = [root]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        kind = type(node)
        if kind is attribute:  # the commonest inner node: one child, no call of its own
            value = node.value
            if type(value) in fields_of:
                push(value)
            continue
        if kind is call:
            found.append(node)
            func = node.func
            if type(func) in fields_of:
                push(func)
            for item in node.args:
                if type(item) in fields_of:
                    push(item)
            for item in node.keywords:
                value = item.value  # a keyword holds one expression
                if type(value) in fields_of:
                    push(item)
            continue
        for name in fields_of.get(kind, ()):
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if type(item) in fields_of:
                        push(item)
            elif type(value) in fields_of:
                push(value)


def _nested_bodies(stmt: ast.stmt):
    for name in _NESTED_BODIES:
        body = getattr(stmt, name, None)
        if body:
            yield body
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    for case in getattr(stmt, "cases", ()):
        yield case.body


# Statements that hold no expression at all, so no call and no store.
_BARE = (ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal)
_COMPOUND = frozenset({
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While, ast.If, ast.With,
    ast.AsyncWith, ast.Try, *(getattr(ast, name) for name in ("TryStar", "Match") if hasattr(ast, name)),
})
_STORE_TYPES = frozenset(_STORES)
_NOTED = frozenset({ast.ClassDef, ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom})


class _Indexer:
    """One pass over every statement: calls per statement and per block, definitions, imports."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.assignments: list[ast.AST] = []

    def block(self, stmts: list[ast.stmt], into: list[ast.Call], stores: list[ast.stmt]) -> None:
        facts = self.facts
        own_calls, calls_within, stores_within = facts.own_calls, facts.calls_within, facts.stores_within
        for stmt in stmts:
            kind = type(stmt)
            if kind in _NOTED:
                self._note(stmt)
            if kind in _COMPOUND:
                self.statement(stmt, into, stores)
            elif not isinstance(stmt, _BARE):
                # A simple statement: its calls are all its own and nothing is nested in it.
                own: list[ast.Call] = []
                _calls_in(stmt, own)
                key = id(stmt)
                own_calls[key] = calls_within[key] = own
                facts.all_calls.extend(own)
                into.extend(own)
                if kind in _STORE_TYPES:
                    facts.all_stores.append(stmt)
                    stores.append(stmt)
                    stores_within[key] = [stmt]
                else:
                    stores_within[key] = []

    def statement(self, stmt: ast.stmt, into: list[ast.Call], stores: list[ast.stmt]) -> None:
        facts = self.facts
        own: list[ast.Call] = []
        for root in _header_roots(stmt):
            _calls_in(root, own)
        facts.own_calls[id(stmt)] = own
        facts.all_calls.extend(own)
        inner = list(own)
        inner_stores: list[ast.stmt] = []
        for body in _nested_bodies(stmt):
            self.block(body, inner, inner_stores)
        facts.calls_within[id(stmt)] = inner
        facts.stores_within[id(stmt)] = inner_stores
        if not isinstance(stmt, _SCOPE_NODES):
            into.extend(inner)  # nested definitions keep their calls and stores to themselves
            stores.extend(inner_stores)
        else:
            into.extend(own)

    def _note(self, stmt: ast.stmt) -> None:
        facts = self.facts
        if isinstance(stmt, ast.ClassDef):
            if is_module_class(stmt):
                facts.module_classes.add(stmt.name)
            for item in stmt.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    facts.methods[(stmt.name, item.name)] = item
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            self.assignments.append(stmt)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == "torch":
                    facts.torch_alias = alias.asname or "torch"
        elif isinstance(stmt, ast.ImportFrom) and stmt.module == "torch":
            for alias in stmt.names:
                facts.imported_names[alias.asname or alias.name] = f"torch.{alias.name}"


def gather_facts(tree: ast.Module) -> FileFacts:
    facts = FileFacts(grad_off_everywhere=module_disables_grad(tree))
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            facts.globals.update(n for n in _store_targets(stmt) if "." not in n)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            facts.functions[stmt.name] = stmt
    _note_header(tree, facts)
    indexer = _Indexer(facts)
    module_calls: list[ast.Call] = []
    module_stores: list[ast.stmt] = []
    indexer.block(tree.body, module_calls, module_stores)
    facts.calls_within[id(tree)] = module_calls
    facts.stores_within[id(tree)] = module_stores
    # Two rounds so ``model = Net(); ema = deepcopy(model)`` resolves whatever the order. Only values that
    # name another binding (``model``, ``deepcopy(model)``) can change their answer in the second round.
    dependent = []
    for node in indexer.assignments:
        if constructs_module(node.value, facts):
            facts.module_names.update(_store_targets(node))
        elif _depends_on_bindings(node.value):
            dependent.append(node)
    for node in dependent:
        if constructs_module(node.value, facts):
            facts.module_names.update(_store_targets(node))
    return facts


def _depends_on_bindings(value: ast.AST) -> bool:
    value = _unwrap_module_chain(value)
    return isinstance(value, ast.Name) or (isinstance(value, ast.Call) and last_name(call_name(value)) == "deepcopy")


def _note_header(tree: ast.Module, facts: FileFacts) -> None:
    """Remember where an inserted ``import torch`` may go: after the docstring and __future__ imports."""
    for index, stmt in enumerate(tree.body):
        is_docstring = index == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
        is_future = isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"
        if not (is_docstring or is_future):
            break
        facts.future_import_end = stmt.end_lineno or stmt.lineno
