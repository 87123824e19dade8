"""File-wide facts gathered in one pass before the rules run: models, functions, imports."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .gradmode import module_disables_grad
from .syntax import call_name, dotted, is_module_class, last_name

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
    if short in facts.module_classes or short in {"from_pretrained", "create_model", "deepcopy"}:
        return short != "deepcopy" or any(
            isinstance(arg, ast.Name) and arg.id in facts.module_names for arg in value.args
        )
    if ".models." in f".{name}" and short[:1].islower():
        return True  # torchvision.models.resnet50(), models.vgg16()
    return short.startswith(_CONSTRUCTOR_PREFIXES) and ("model" in short or "net" in short)


def _store_targets(node: ast.AST) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [name for target in targets if (name := dotted(target))]


def gather_facts(tree: ast.Module) -> FileFacts:
    facts = FileFacts(grad_off_everywhere=module_disables_grad(tree))
    assignments: list[ast.AST] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            facts.globals.update(n for n in _store_targets(stmt) if "." not in n)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            facts.functions[stmt.name] = stmt
    _note_header(tree, facts)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            if is_module_class(node):
                facts.module_classes.add(node.name)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    facts.methods[(node.name, item.name)] = item
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            assignments.append(node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch":
                    facts.torch_alias = alias.asname or "torch"
        elif isinstance(node, ast.ImportFrom) and node.module == "torch":
            for alias in node.names:
                facts.imported_names[alias.asname or alias.name] = f"torch.{alias.name}"
    # Two rounds so ``model = Net(); ema = deepcopy(model)`` resolves whatever the order.
    for _ in range(2):
        for node in assignments:
            if constructs_module(node.value, facts):
                facts.module_names.update(_store_targets(node))
    return facts


def _note_header(tree: ast.Module, facts: FileFacts) -> None:
    """Remember where an inserted ``import torch`` may go: after the docstring and __future__ imports."""
    for index, stmt in enumerate(tree.body):
        is_docstring = index == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
        is_future = isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"
        if not (is_docstring or is_future):
            break
        facts.future_import_end = stmt.end_lineno or stmt.lineno
