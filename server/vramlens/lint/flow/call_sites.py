"""A call that reaches a function of this file, as the call graph records it (callgraph.py resolves the calls;
contexts.py and reachability.py read the sites)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

CLOSURE, CALLBACK, OVERRIDE = "closure", "callback", "override"


@dataclass
class CallSite:
    call: ast.Call
    caller: ast.AST  # a function definition or the module
    callee: ast.AST  # a function definition of this file
    mode: str | None  # the grad mode the caller's code sets around the call (None: the caller's own)
    loops: tuple[ast.stmt, ...]  # the caller's loops around the call, outermost first
    skips_self: bool  # a method called through an instance: its first parameter is the instance
    indirect: str | None = None  # CLOSURE: ``optimizer.step(closure)`` runs it and returns its result;
    # CALLBACK: a function passed to a call (``beam_search.search(state, step)``) that will run it;
    # OVERRIDE: ``self.predict(x)`` reaching a subclass's ``predict`` when the instance is one (what the caller
    # implies about the callee holds for it; what the override does is not the caller's certainly)
