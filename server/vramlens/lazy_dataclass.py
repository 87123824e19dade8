"""A dataclass made when its first instance is: ``@lazy_dataclass`` / ``@lazy_dataclass(frozen=True)``
is ``dataclasses.dataclass`` with the same options, applied when the class's first instance is made.

On Python 3.11 ``dataclass()`` compiles each generated method (``__init__``, ``__repr__``, ``__eq__``,
and for a frozen class ``__setattr__``, ``__delattr__``, ``__hash__``) from source: 0.3 to 0.5 ms a
class. `vramlens analyze` imports some 55 result and view classes (0.022 s, a fifth of the command on a
small capture) and instantiates half of them in a given analysis (ranks, notebooks, kernel holders,
storing lines... only when there are some). Made on first use, the others cost nothing.

An instance is made by the class's ``__init__`` or, unpickled or copied, given its fields by
``__setstate__``: until the class is made both are stand-ins that make it first. So every instance
is of a made class, and everything read from instances (``__eq__``, ``hash``, ``repr``,
``dataclasses.replace`` and ``fields``, freezing) is the stdlib's own. What differs is the class before
its first instance: ``dataclasses.is_dataclass(cls)`` is False and a ``field()`` default still reads as
the Field. Classes inspected that way, with their own ``__init__`` or ``__setstate__``, without fields,
or asking for ``slots`` (a new class) keep ``dataclasses.dataclass``.
"""

from __future__ import annotations

import _thread  # threading's own lock, without importing threading (start-up time)

_making = _thread.RLock()  # the language server may instantiate from several threads
_pending: dict = {}  # class -> the options it is to be made with


def lazy_dataclass(cls=None, /, **options):
    """``dataclasses.dataclass(cls, **options)``, applied when the first instance is made."""
    if cls is None:
        return lambda cls: _defer(cls, options)
    return _defer(cls, options)


def _defer(cls, options: dict):
    own = cls.__dict__
    if "__init__" in own or "__setstate__" in own or options.get("slots") or options.get("init") is False \
            or not own.get("__annotations__"):
        raise TypeError(f"{cls.__qualname__}: lazy_dataclass makes __init__ and __setstate__ of a class with "
                        "fields; use dataclasses.dataclass here")

    def first_init(self, *args, **kwargs):
        _make(cls)
        cls.__init__(self, *args, **kwargs)

    # An instance made without __init__, by unpickling or copying, gets its fields here: the language
    # server's first instance of a class may come pickled from its load worker (lsp/load_worker.py).
    def first_setstate(self, state):
        _make(cls)
        state, slots = state if type(state) is tuple and len(state) == 2 else (state, None)
        if state:
            self.__dict__.update(state)  # as pickle does without __setstate__ (frozen classes included)
        for name, value in (slots or {}).items():
            object.__setattr__(self, name, value)

    first_init.__qualname__ = f"{cls.__qualname__}.__init__"
    first_setstate.__qualname__ = f"{cls.__qualname__}.__setstate__"
    cls.__init__, cls.__setstate__ = first_init, first_setstate
    _pending[cls] = options
    return cls


def _make(cls) -> None:
    with _making:
        for klass in reversed(cls.__mro__):  # a lazy base first: dataclass() reads its bases' fields
            options = _pending.pop(klass, None)
            if options is None:
                continue  # not lazy, or made already (by another thread meanwhile)
            del klass.__init__, klass.__setstate__  # dataclass() writes __init__ only where the class has none
            import dataclasses  # noqa: PLC0415 - imported already wherever a class has field() defaults

            dataclasses.dataclass(klass, **options)
