"""Named edges between Python objects, read without running any of the user's code.

``edges(obj)`` yields ``(kind, label, child)`` for the references worth following towards
tensors: a dict's values by key, a sequence's items by index, an object's attributes by name,
a frame's locals, a traceback's frame and next link, a function's closure variables, a leaf
tensor's ``.grad``. Attributes are read through the C-level descriptors, never through a
class's own ``__getattr__``/``__getattribute__``/``__repr__``, so walking a user's object
runs none of their code. Classes, modules, functions' globals and generators are not entered.
"""

from __future__ import annotations

import collections
import math
import types

HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: classes defined in Python (user and library code)
LABEL_LIMIT = 200  # characters of a name or key kept

# What an object of a given type opens onto.
NONE, DICT, SEQUENCE, SET, EXCEPTION, TRACEBACK, FRAME, FUNCTION, CELL, TENSOR, INSTANCE = range(11)

# Edges that carry a name a person would use to find the object (a container's own place).
NAMED_EDGES = frozenset({"global", "local", "extra_root", "attribute", "tb_frame", "closure", "__dict__"})

_BUILTIN_CONTAINERS = (dict, list, tuple, set, frozenset, collections.deque)
_KIND_NAMES = {EXCEPTION: "exception", TRACEBACK: "traceback", FRAME: "frame", FUNCTION: "function", CELL: "cell",
               TENSOR: "tensor"}
_EXCEPTION_FIELDS = {name: BaseException.__dict__[name] for name in ("__traceback__", "__cause__", "__context__", "args")}
_CLOSED = (type, types.ModuleType, types.MethodType, types.BuiltinFunctionType, types.CodeType,
           types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType, property,
           classmethod, staticmethod)


_MRO = type.__dict__["__mro__"]


def mro(cls) -> tuple:
    """A class's method resolution order, read without any metaclass' attribute hooks."""
    return _MRO.__get__(cls)


def is_a(obj, *bases) -> bool:
    """isinstance() without its fallback to ``obj.__class__``, which runs a class's own
    ``__getattribute__`` — user code — whenever the answer is no."""
    found = mro(type(obj))
    return any(base in found for base in bases)


def type_name(cls) -> str:
    """``module.Qualname`` of a class, read from the class itself."""
    try:
        module = cls.__module__
        qualname = cls.__qualname__
    except Exception:
        return "<unknown>"
    if type(module) is not str or type(qualname) is not str:
        return "<unknown>"
    return (qualname if module == "builtins" else f"{module}.{qualname}")[:LABEL_LIMIT]


def class_facts(cls) -> dict:
    """{"class": qualname, "python_module": module} of a class, for the census' tables."""
    try:
        return {"class": str(cls.__qualname__)[:LABEL_LIMIT], "python_module": str(cls.__module__)[:LABEL_LIMIT]}
    except Exception:
        return {"class": "<unknown>", "python_module": None}


def key_label(key):
    """A dict key as JSON can carry it: plain scalars as they are, anything else by its type."""
    kind = type(key)
    if kind is str:
        return key[:LABEL_LIMIT]
    if kind is float and not math.isfinite(key):
        return repr(key)  # JSON has no nan or inf
    if kind in (int, float, bool) or key is None:
        return key
    return f"<{type_name(kind)}>"


def is_named(kind: str, label) -> bool:
    return kind in NAMED_EDGES or (kind == "key" and type(label) is str)


class Graph:
    def __init__(self, tensor_type, own_ids: set[int]):
        self.tensor_type = tensor_type
        self.own_ids = own_ids  # the census' own lists: never entered
        self.namespaces: set[int] = set()  # modules' globals: entered only as roots, by their module's name
        self._kinds: dict[type, int] = {}
        self._dict_getters: dict[type, object] = {}
        self._slots: dict[type, tuple] = {}

    # -- what a type opens onto ---------------------------------------------------------
    def kind(self, cls) -> int:
        found = self._kinds.get(cls)
        if found is None:
            try:
                found = self._classify(cls)
            except Exception:
                found = NONE
            self._kinds[cls] = found
        return found

    def _classify(self, cls) -> int:
        order = mro(cls)
        if self.tensor_type is not None and self.tensor_type in order:
            return TENSOR
        if any(closed in order for closed in _CLOSED):
            return NONE
        if dict in order:
            return DICT
        if list in order or tuple in order or collections.deque in order:
            return SEQUENCE
        if set in order or frozenset in order:
            return SET
        if BaseException in order:
            return EXCEPTION
        if cls is types.TracebackType:
            return TRACEBACK
        if cls is types.FrameType:
            return FRAME
        if cls is types.FunctionType:
            return FUNCTION
        if cls is types.CellType:
            return CELL
        if cls.__flags__ & HEAPTYPE:
            return INSTANCE
        return NONE

    def container_kind(self, obj) -> str:
        """list, tuple, deque, dict, set, frozenset (subclasses too), frame, traceback, exception, function, cell or object."""
        for base in _BUILTIN_CONTAINERS:
            if is_a(obj, base):
                return base.__name__
        return _KIND_NAMES.get(self.kind(type(obj)), "object")

    def length(self, obj) -> int | None:
        """len() of a builtin container (through the builtin's own __len__), None for anything else."""
        for base in _BUILTIN_CONTAINERS:
            if is_a(obj, base):
                try:
                    return base.__len__(obj)
                except Exception:
                    return None
        return None

    def opens(self, obj) -> bool:
        return self.kind(type(obj)) != NONE and id(obj) not in self.own_ids and id(obj) not in self.namespaces

    # -- the edges ----------------------------------------------------------------------
    def edges(self, obj):
        if id(obj) in self.own_ids or id(obj) in self.namespaces:
            return
        kind = self.kind(type(obj))
        if kind == DICT:
            for key, value in dict.items(obj):
                yield "key", key_label(key), value
            yield from self._attributes(obj)
        elif kind == SEQUENCE:
            base = tuple if is_a(obj, tuple) else list if is_a(obj, list) else collections.deque
            for index, item in enumerate(base.__iter__(obj)):
                yield "index", index, item
        elif kind == SET:
            base = frozenset if is_a(obj, frozenset) else set
            for item in base.__iter__(obj):
                yield "member", None, item
        elif kind == INSTANCE:
            yield from self._attributes(obj)
        elif kind == TENSOR:
            yield from self._gradient(obj)
        elif kind == EXCEPTION:
            for name in ("__traceback__", "__cause__", "__context__", "args"):
                yield "attribute", name, _EXCEPTION_FIELDS[name].__get__(obj)
            yield from self._attributes(obj)
        elif kind == TRACEBACK:
            yield "tb_frame", None, obj.tb_frame
            yield "tb_next", None, obj.tb_next
        elif kind == FRAME:
            yield from frame_locals(obj)
        elif kind == FUNCTION:
            yield from _closure(obj)
        elif kind == CELL:
            yield "cell", None, _cell_contents(obj)

    def instance_dict(self, obj) -> dict | None:
        """An object's ``__dict__``, read through the C-level descriptor (None when it has none)."""
        cls = type(obj)
        getter = self._dict_getter(cls)
        if getter is None:
            return None
        try:
            attributes = getter.__get__(obj, cls)
        except Exception:
            return None
        return attributes if type(attributes) is dict else None

    def _attributes(self, obj):
        attributes = self.instance_dict(obj)
        if attributes is not None:
            for name, value in dict.items(attributes):
                yield "attribute", key_label(name), value
        cls = type(obj)
        for name, slot in self._slot_descriptors(cls):
            try:
                yield "attribute", name, slot.__get__(obj, cls)
            except Exception:  # an empty slot
                continue

    def _dict_getter(self, cls):
        """The C-level ``__dict__`` descriptor of a class (None when its instances have none,
        or when a class replaced it with something of its own, which could run code)."""
        if cls not in self._dict_getters:
            getter = None
            for klass in mro(cls):
                candidate = klass.__dict__.get("__dict__")
                if candidate is not None:
                    getter = candidate if type(candidate) is types.GetSetDescriptorType else None
                    break
            self._dict_getters[cls] = getter
        return self._dict_getters[cls]

    def _slot_descriptors(self, cls) -> tuple:
        if cls not in self._slots:
            found = []
            for klass in mro(cls):
                slots = klass.__dict__.get("__slots__", ())
                for name in (slots,) if type(slots) is str else slots if type(slots) in (tuple, list) else ():
                    descriptor = klass.__dict__.get(name) if type(name) is str else None
                    if type(descriptor) is types.MemberDescriptorType:
                        found.append((name, descriptor))
            self._slots[cls] = tuple(found)
        return self._slots[cls]

    def _gradient(self, tensor):
        # .grad of a non-leaf warns and is always None unless retain_grad() was called.
        if tensor.is_leaf:
            yield "grad", None, tensor.grad


def frame_locals(frame):
    """A frame's locals by name (a dict up to 3.12, a write-through proxy from 3.13)."""
    try:
        names = frame.f_locals
    except Exception:
        return
    for name, value in names.items():
        yield "local", key_label(name), value


def _closure(function):
    cells = function.__closure__ or ()
    names = function.__code__.co_freevars
    for name, cell in zip(names, cells):
        yield "closure", name, _cell_contents(cell)


def _cell_contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None
