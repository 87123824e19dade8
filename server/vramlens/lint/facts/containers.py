"""Whether the receiver of ``.append(...)`` is known to be a list (or a deque, a set, a dict of them).

``self.metric.append(ids, outputs)`` of a metrics object that detaches inside is no list append: the receiver's
bindings in the file decide. A container counts as a list when every binding of it in the file is a list (or
deque, set) display, comprehension or constructor, or an annotation saying so (``List[Tensor]``,
``field(default_factory=list)``), but not a ``deque(maxlen=n)``, which keeps the last few; a subscripted receiver
(``self.store[key].append``) when its base is bound to a dict, defaultdict or list. Bound to anything else, or
never bound in the file: unknown, and no finding.
"""

from __future__ import annotations

import ast

from ..parse.syntax import call_name, dotted, last_name
from .file_facts import FileFacts

_LIST_CONSTRUCTORS = frozenset({"list", "deque", "set", "OrderedSet"})
_MAPPING_CONSTRUCTORS = frozenset({"dict", "defaultdict", "OrderedDict"})
_LIST_ANNOTATIONS = frozenset({"list", "List", "deque", "Deque", "set", "Set", "MutableSequence", "Sequence"})
_MAPPING_ANNOTATIONS = frozenset({"dict", "Dict", "DefaultDict", "defaultdict", "MutableMapping", "Mapping"})
# Arguments each method of a list / deque / set takes: a call with other arguments is some other object's method.
ARITY = {"append": 1, "appendleft": 1, "add": 1, "extend": 1, "insert": 2}

LIST, MAPPING, OTHER = "list", "mapping", "other"
BOUNDED = "bounded"  # ``deque(maxlen=100)``: keeps the last few, never every step's


def _bounded(call: ast.Call) -> bool:
    maxlen = next((k.value for k in call.keywords if k.arg == "maxlen"), call.args[1] if len(call.args) > 1 else None)
    return maxlen is not None and not (isinstance(maxlen, ast.Constant) and maxlen.value is None)


def list_method_call(call: ast.Call) -> bool:
    """``xs.append(v)`` has the shape of a list's method call: its arity, no keywords."""
    wanted = ARITY.get(call.func.attr) if isinstance(call.func, ast.Attribute) else None
    return wanted is not None and len(call.args) == wanted and not call.keywords \
        and not any(isinstance(a, ast.Starred) for a in call.args)


def is_known_list(receiver: ast.AST, scope: ast.AST, cls: ast.ClassDef | None, facts: FileFacts,
                  resolve=lambda name: name) -> bool:
    """The receiver of the append is proven a list-like container by its bindings in the file. ``resolve``: a
    local alias to the container it refers to (``buf = self.history``)."""
    if isinstance(receiver, ast.Subscript):
        base = receiver.value
        while isinstance(base, ast.Subscript):
            base = base.value
        return _kind(base, scope, cls, facts, resolve) in (MAPPING, LIST)
    return _kind(receiver, scope, cls, facts, resolve) == LIST


def _kind(node: ast.AST, scope: ast.AST, cls: ast.ClassDef | None, facts: FileFacts, resolve) -> str | None:
    name = dotted(node)
    if not name:
        return None
    name = resolve(name)
    if name.startswith("self.") and name.count(".") == 1:
        places = [c for c in _lineage(cls, facts.classes)]
    elif "." in name:
        return None
    else:
        places = [scope] if not isinstance(scope, ast.Module) else []
        places.append(facts.tree)
    kinds = set()
    for place in places:
        kinds |= _binding_kinds(name, place, facts)
        if kinds and place is scope and not isinstance(scope, ast.Module):
            break  # a local name: its own function's bindings decide
    if not kinds or OTHER in kinds or len(kinds) > 1:
        return None
    return kinds.pop()


def _lineage(cls: ast.ClassDef | None, classes: dict, depth: int = 0) -> list[ast.ClassDef]:
    """The class and its bases defined in the same file."""
    if cls is None or depth > 5:
        return []
    found = [cls]
    for base in cls.bases:
        parent = classes.get(last_name(dotted(base) or ""))
        if parent is not None and parent is not cls:
            found += _lineage(parent, classes, depth + 1)
    return found


def _binding_kinds(name: str, place: ast.AST, facts: FileFacts) -> set[str]:
    attribute = name.startswith("self.")
    key = (id(place), attribute)
    table = facts.bindings.get(key)  # each place's bindings read once per analysis
    if table is None:
        table = facts.bindings[key] = _bindings(_assignments(place, attribute, facts), attribute)
    return set(table.get(name, ()))


def _assignments(place: ast.AST, attribute: bool, facts: FileFacts) -> list[ast.stmt]:
    """The assignments of ``place``: a class's own and its methods' whole (for ``self.`` attributes); a function's
    or the module's, nested definitions left out."""
    if attribute and isinstance(place, ast.ClassDef):
        return [*facts.stores_inside(place), *(s for m in facts.methods_of(place) for s in facts.stores_within_all(m))]
    return facts.stores_inside(place)


def _bindings(assignments: list[ast.stmt], attribute: bool) -> dict[str, set[str]]:
    """The kinds every name (or, in a class, every ``self.`` attribute) is bound to by these assignments."""
    table: dict[str, set[str]] = {}

    def bind(name: str | None, kind: str | None) -> None:
        if name and kind is not None:
            table.setdefault(name, set()).add(kind)

    for node in assignments:
        if isinstance(node, ast.Assign):
            kind = None
            for target in node.targets:
                if isinstance(target, (ast.Tuple, ast.List)):
                    value = node.value
                    if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                        for part, made in zip(target.elts, value.elts):  # ``self.masks, self.losses = [], []``
                            bind(dotted(part), _value_kind(made))
                    else:
                        for part in target.elts:  # ``a, b = f()``: bound to something unknown
                            bind(dotted(part.value if isinstance(part, ast.Starred) else part), OTHER)
                    continue
                name = dotted(target)
                if name:
                    kind = kind or _value_kind(node.value)
                    bind(name, kind)
        elif isinstance(node, ast.AnnAssign):
            kind = _annotation_kind(node.annotation) or (_value_kind(node.value) if node.value is not None else OTHER)
            name = dotted(node.target)
            bind(name, kind)
            if attribute and isinstance(node.target, ast.Name):
                bind("self." + node.target.id, kind)  # a class-level annotation of an instance attribute
    return table


def _value_kind(value: ast.AST) -> str | None:
    if isinstance(value, (ast.List, ast.ListComp, ast.Set, ast.SetComp)):
        return LIST
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return MAPPING
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Mult, ast.Add)):
        return _value_kind(value.left) if isinstance(value.left, (ast.List, ast.ListComp)) else _value_kind(value.right)
    if isinstance(value, ast.Constant) and value.value is None:
        return None  # ``self.outputs = None`` until first use: the other bindings decide
    if isinstance(value, ast.Call):
        short = last_name(call_name(value))
        if short == "deque" and _bounded(value):
            return BOUNDED
        if short in _LIST_CONSTRUCTORS:
            return LIST
        if short in _MAPPING_CONSTRUCTORS:
            return MAPPING
        if short == "field":
            factory = next((k.value for k in value.keywords if k.arg == "default_factory"), None)
            factory_name = dotted(factory) if factory is not None else None
            if factory_name and last_name(factory_name) in _LIST_CONSTRUCTORS:
                return LIST
            if factory_name and last_name(factory_name) in _MAPPING_CONSTRUCTORS:
                return MAPPING
    return OTHER


def _annotation_kind(annotation: ast.AST) -> str | None:
    node = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    name = last_name(dotted(node) or "")
    if name in _LIST_ANNOTATIONS:
        return LIST
    if name in _MAPPING_ANNOTATIONS:
        return MAPPING
    return None


_GROWING_METHODS = frozenset({"append", "appendleft", "extend", "insert", "add", "__iadd__"})


def fixed_slots(container: str, scope: ast.AST, cls: ast.ClassDef | None, facts: FileFacts) -> bool:
    """A list only ever written by index: ``self.cache = [torch.empty(0) for _ in range(n)]``, then
    ``self.cache[i] = h`` on every call. Writing past a list's end raises, so it keeps one value per slot and
    never grows. Only a list display or comprehension counts (a set, a deque or a dict is not indexed so), and
    nothing in the file may grow it (``append``, ``extend``, ``insert``, ``+=``) or take another name for it."""
    if not container.startswith("self.") and "." in container:
        return False
    places = _lineage(cls, facts.classes) if container.startswith("self.") else ([scope] if not isinstance(scope, ast.Module) else [])
    kinds = _display_kinds(container, places, facts) if places else []
    if not kinds or any(kind != LIST for kind in kinds):
        return False
    for place in places:
        for node in ast.walk(place):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _GROWING_METHODS \
                    and dotted(node.func.value) == container:
                return False
            if isinstance(node, ast.AugAssign) and dotted(node.target) == container:
                return False
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and dotted(node.value) == container:
                return False  # ``buf = self.cache``: grown, perhaps, under another name
    return True


def _display_kinds(container: str, places: list[ast.AST], facts: FileFacts) -> list[str]:
    """What each binding of ``container`` in ``places`` makes: LIST only for a list display or comprehension
    (``[None] * n`` too), OTHER for anything else."""
    kinds = []
    for place in places:
        for node in _assignments(place, container.startswith("self."), facts):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            if any(dotted(t) == container for t in targets) and node.value is not None:
                value = node.value
                if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
                    value = value.left if isinstance(value.left, ast.List) else value.right
                kinds.append(LIST if isinstance(value, (ast.List, ast.ListComp)) else OTHER)
    return kinds
