"""What the walker asks of a rule: the codes it reports and the hooks it runs on.

A rule family is a class with ``codes`` (its ``Code`` declarations: the walker gives each finding its rule
and severity from them, catalog.py collects them) and any of these hooks, called only when defined (they run
for every statement and call of a file):

- ``check_scope(ctx)`` / ``finish_scope(ctx)``: entering and leaving a function or the module;
- ``check_statement(stmt, ctx)``: each statement, before the walk binds what it assigns;
- ``check_call(call, ctx)``: each call a statement makes;
- ``check_kept_argument(call, argument, effect, ctx)``: a graph-carrying ``argument`` handed to a function
  of the file whose summary says it keeps that parameter (``effect``: where and how).
"""

from __future__ import annotations

from ..findings import Code

HOOKS = ("check_scope", "finish_scope", "check_statement", "check_call", "check_kept_argument")


class Rule:
    """Base of the rule families: their codes, and no hook until a family defines one."""

    codes: tuple[Code, ...] = ()
