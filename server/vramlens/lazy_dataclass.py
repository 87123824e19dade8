"""A dataclass made when its first instance is: ``@lazy_dataclass`` / ``@lazy_dataclass(frozen=True)``
is ``dataclasses.dataclass`` with the same options, applied on the class's first instantiation.

On Python 3.11 ``dataclass()`` compiles each generated method (``__init__``, ``__repr__``, ``__eq__``,
and for a frozen class ``__setattr__``, ``__delattr__``, ``__hash__``) from source: about 0.4 ms a
class. `vramlens analyze` imports some 55 result and view classes, 21 ms of a command that takes
0.1 s on a small capture, and half of them are never instantiated in a given analysis (ranks,
notebooks, experiments, storing lines...). Made on first use, those cost nothing.

An instance only ever exists once its class is made, so everything read from instances
(``__eq__``, ``repr``, ``dataclasses.replace``, ``dataclasses.fields``, freezing) is the stdlib's own.
What differs is the class before its first instance: ``dataclasses.is_dataclass(cls)`` is False and a
``field()`` default still reads as the Field. Classes that are inspected that way, that define their
own ``__init__`` or ask for ``slots`` (a new class) keep ``dataclasses.dataclass``.
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
    if "__init__" in cls.__dict__ or options.get("slots") or options.get("init") is False:
        raise TypeError(f"{cls.__qualname__}: lazy_dataclass makes the __init__; use dataclasses.dataclass here")

    def first_init(self, *args, **kwargs):
        _make(cls)
        cls.__init__(self, *args, **kwargs)

    first_init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = first_init
    _pending[cls] = options
    return cls


def _make(cls) -> None:
    with _making:
        for klass in reversed(cls.__mro__):  # a lazy base first: dataclass() reads its bases' fields
            options = _pending.pop(klass, None)
            if options is None:
                continue  # not lazy, or made already (by another thread meanwhile)
            del klass.__init__  # dataclass() writes __init__ only where the class has none of its own
            import dataclasses  # noqa: PLC0415 - imported already wherever a class has field() defaults

            dataclasses.dataclass(klass, **options)
