"""Parameters, buffers and gradients, named by their path from the root module.

A root module is a live ``nn.Module`` that no other live module has as a child. Its tree is
walked through the modules' own ``_modules``/``_parameters``/``_buffers`` dicts (never through
methods a subclass may override), iteratively and once per module, so a shared submodule or a
tied weight is named once, by the first path that reaches it.
"""

from __future__ import annotations

from .graph import Graph, is_a, key_label


class Named:
    __slots__ = ("name", "tensor")

    def __init__(self, name: str, tensor: int):
        self.name, self.tensor = name, tensor


class RootModule:
    __slots__ = ("module", "cls", "parameters", "buffers", "gradients", "cache_modules", "aliases", "other_device", "bytes")

    def __init__(self, module):
        self.module = module
        self.cls = type(module)
        self.parameters: list[Named] = []
        self.buffers: list[Named] = []
        self.gradients: list[Named] = []
        self.cache_modules: list[tuple[str, object]] = []  # (path, submodule) of submodules that are caches
        self.aliases = 0  # names that reached a parameter or buffer already named (tied weights)
        self.other_device = 0  # parameters and buffers the device filter left out
        self.bytes = {"parameter": 0, "buffer": 0, "gradient": 0}

    def weight(self) -> int:
        return len(self.parameters) + len(self.buffers)


def _own_dict(graph: Graph, module, name: str) -> dict:
    attributes = graph.instance_dict(module) or {}
    found = attributes.get(name)
    return found if found is not None and is_a(found, dict) else {}


def find_roots(graph: Graph, modules: list) -> list:
    children: set[int] = set()
    for module in modules:
        for child in dict.values(_own_dict(graph, module, "_modules")):
            if child is not None:
                children.add(id(child))
    return [module for module in modules if id(module) not in children]


def name_tensors(graph: Graph, inventory, roots: list, is_cache_class) -> list[RootModule]:
    """Every root's parameters, buffers and gradients on the device, by path; tied ones once."""
    named: set[int] = set()  # ids of tensors already named by some root
    found = []
    for module in roots:
        root = RootModule(module)
        stack = [("", module)]
        seen = {id(module)}
        while stack:
            prefix, current = stack.pop()
            tables = (("parameter", "_parameters"), ("buffer", "_buffers"))
            if current is not module and is_cache_class(type(current)):
                # A cache kept as a submodule (its buffers are the cache): found by the cache walk.
                root.cache_modules.append((prefix.rstrip("."), current))
                tables = tables[:1]
            for kind, table in tables:
                for name, tensor in dict.items(_own_dict(graph, current, table)):
                    if tensor is None:
                        continue
                    if id(tensor) in named:
                        root.aliases += 1
                        continue
                    index = inventory.index(tensor)
                    if index is None:
                        root.other_device += 1
                        continue
                    named.add(id(tensor))
                    path = prefix + str(key_label(name))
                    if kind == "buffer":
                        root.buffers.append(Named(path, index))
                    else:
                        root.parameters.append(Named(path, index))
                        _gradient_of(tensor, path, inventory, root)
            children = list(dict.items(_own_dict(graph, current, "_modules")))
            for name, child in reversed(children):  # popped in definition order
                if child is not None and id(child) not in seen:
                    seen.add(id(child))
                    stack.append((f"{prefix}{key_label(name)}.", child))
        if root.parameters or root.buffers:
            found.append(root)
    found.sort(key=RootModule.weight, reverse=True)
    return found


def _gradient_of(parameter, path: str, inventory, root: RootModule) -> None:
    try:
        gradient = parameter.grad if parameter.is_leaf else None  # .grad of a non-leaf only warns
    except Exception:
        return
    if gradient is not None:
        index = inventory.index(gradient)
        if index is not None:
            root.gradients.append(Named(path, index))


def claim(inventory, roots: list[RootModule]) -> None:
    """Parameters first (every root), then buffers, then gradients: a storage goes to the first."""
    for role, table in (("parameter", "parameters"), ("buffer", "buffers"), ("gradient", "gradients")):
        for owner, root in enumerate(roots):
            for entry in getattr(root, table):
                root.bytes[role] += inventory.claim(entry.tensor, role, owner)
