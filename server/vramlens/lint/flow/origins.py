"""Where graph entered a dict: the line to change when the dict itself is what is kept.

``metrics["nll_loss"] = nll.cpu().mean()`` puts a graph-carrying tensor into ``metrics``; when a caller later
appends ``metrics`` to a list that outlives the step, the leak is fixed where the tensor went in (``.detach()``
or ``.item()`` there), not where the dict is kept: a dict has no ``.detach()``. The walker follows such places
through plain names, dict literals, stores under a key, and what functions of the file return.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..parse.syntax import call_name, last_name

# Calls that make an empty or filled dict.
_DICT_MAKERS = frozenset({"dict", "OrderedDict", "defaultdict"})


@dataclass(frozen=True, order=True)
class Origin:
    """A graph-carrying value put into a dict, in the positions of the chunk it was parsed with."""

    chunk: int
    line: int
    column: int
    end_line: int
    end_column: int
    text: str


Origins = frozenset


def makes_dict(value: ast.AST | None) -> bool:
    """``{...}``, ``dict(...)``, ``defaultdict(list)``: a value that is a dict when it is made."""
    if isinstance(value, ast.Dict):
        return True
    return isinstance(value, ast.Call) and last_name(call_name(value) or "") in _DICT_MAKERS


def dict_values(value: ast.AST) -> list[ast.AST]:
    """The values a dict literal or ``dict(k=v)`` is made with."""
    if isinstance(value, ast.Dict):
        return [v for v in value.values if v is not None]
    if isinstance(value, ast.Call):
        return [k.value for k in value.keywords if k.arg is not None]
    return []
