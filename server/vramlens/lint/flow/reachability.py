"""Backward reachability: which parameters a function backpropagates, whether a backward is reachable from what
it returns (a training loop two calls up included), and the name-level dataflow of scopes, classes and the
file that the lifetime checks consume. Part of the call graph (callgraph.py)."""

from __future__ import annotations

import ast

from ..facts.dataflow import Dataflow, backward_reads, names_read, scope_edges
from ..facts.library import BACKPROPAGATED_RETURNS
from ..parse.syntax import dotted, is_backward_call
from .call_sites import CallSite


class Reachability:
    """The backward-reachability part of CallGraph."""

    # -- backward reachability ---------------------------------------------------------------------
    def dataflow(self, scope: ast.AST) -> Dataflow:
        """The scope's dataflow, counting arguments of local callees that backpropagate them as backward reads."""
        return self._dataflow_of([scope])

    def dataflow_into(self, scope: ast.AST, reads: list[set[str]]) -> Dataflow:
        """The scope's assignments as edges, with ``reads`` standing for the backward reads: whether what a region
        computes reaches another sink (the values a backpropagated function returns)."""
        return Dataflow(lambda: self._scope_edges(scope), reads)

    def class_dataflow(self, cls: ast.ClassDef) -> Dataflow:
        """Every method of the class (and the functions nested in them) together: where a ``self.x`` kept
        in one method may be consumed. A method's return value flows to ``self.<method>`` in its callers."""
        methods = [(name, m) for (owner, name), m in self.facts.methods.items() if owner == cls.name]
        members = [m for _, m in methods]
        stack = list(members)
        while stack:
            for nested in self.facts.nested.get(id(stack.pop()), ()):
                members.append(nested)
                stack.append(nested)
        returns = []
        for name, method in methods:
            read: set[str] = set()
            for node in ast.walk(method):
                if isinstance(node, ast.Return) and node.value is not None:
                    read |= names_read(node.value)
            if read:
                returns.append(({f"self.{name}"}, read))
        flow = self._dataflow_of(members)
        flow.edges.extend(returns)
        return flow

    def file_dataflow(self) -> Dataflow:
        return self._dataflow_of(self.scopes)

    def _dataflow_of(self, scopes: list[ast.AST]) -> Dataflow:
        """The dataflow of ``scopes`` together; each scope's edges and backward reads are computed once."""
        consumed_by = getattr(self, "backprops_params", {})
        reads: list[set[str]] = []
        for scope in scopes:
            reads.extend(self._scope_reads(scope))
            for site in self.sites_from.get(id(scope), ()):
                consumed = consumed_by.get(id(site.callee), ())
                if consumed:
                    for parameter, argument in self.bound_arguments(site):
                        if parameter in consumed:
                            reads.append(names_read(argument))
        return Dataflow(lambda: [e for scope in scopes for e in self._scope_edges(scope)], reads)

    def _scope_reads(self, scope: ast.AST) -> list[set[str]]:
        found = self._reads.get(id(scope))
        if found is None:
            found = self._reads[id(scope)] = backward_reads(self.facts.calls_inside(scope))
        return found

    def _scope_edges(self, scope: ast.AST) -> list[tuple[set[str], set[str]]]:
        found = self._edges.get(id(scope))
        if found is None:
            facts = self.facts
            found = self._edges[id(scope)] = scope_edges(facts.stores_inside(scope), facts.calls_inside(scope), facts.loops_inside(scope))
        return found

    def _backpropagated_parameters(self) -> dict[int, set[str]]:
        """Parameters a function feeds to backward (itself or through a callee)."""
        found: dict[int, set[str]] = {}
        self.backprops_params = found
        for _ in range(3):
            changed = False
            for func in self.facts.scopes:
                flow = self.dataflow(func)
                if not flow.backward_reads:
                    continue
                params = set(self.parameters(func))
                consumed = {p for p in params if flow.reaches_backward({p})}
                if consumed - found.get(id(func), set()):
                    found[id(func)] = found.get(id(func), set()) | consumed
                    changed = True
            if not changed:
                break
        return found

    def _results_backpropagated(self) -> dict[int, bool]:
        """A backward pass is reachable from what the function returns: a caller feeds it to backward,
        or returns it to a caller that does (a training loop two calls up)."""
        result: dict[int, bool] = {
            id(f): f.name in BACKPROPAGATED_RETURNS for f in self.facts.scopes
        }
        flows = {}
        for _ in range(len(self.facts.scopes) + 1):
            changed = False
            for func in self.facts.scopes:
                if result[id(func)]:
                    continue
                for site in self.callers_of(func):
                    caller = site.caller
                    flow = flows.get(id(caller))
                    if flow is None:
                        flow = flows[id(caller)] = self.dataflow(caller)
                    if self._site_result_backpropagated(site, flow, result):
                        result[id(func)] = changed = True
                        break
            if not changed:
                break
        return result

    def _site_result_backpropagated(self, site: CallSite, flow: Dataflow, result: dict[int, bool]) -> bool:
        call = site.call
        caller = site.caller
        inside_backward = self._backward_parts.get(id(caller))
        if inside_backward is None:
            inside_backward = self._backward_parts[id(caller)] = {
                id(node) for c in self.facts.calls_inside(caller) if is_backward_call(c) for node in ast.walk(c)
            }
        if id(call) in inside_backward:
            return True  # ``helper(x).sum().backward()``
        receivers = self._result_names(call, caller)
        if receivers and flow.reaches_backward(receivers):
            return True
        if isinstance(caller, ast.Module) or not result.get(id(caller)):
            return False
        parts = self._returned_parts.get(id(caller))
        if parts is None:
            nodes: set[int] = set()
            names: set[str] = set()
            for ret in self._returns(caller):
                if ret.value is not None:
                    nodes.update(id(n) for n in ast.walk(ret.value))
                    names |= names_read(ret.value)
            parts = self._returned_parts[id(caller)] = (nodes, names)
        if id(call) in parts[0]:
            return True  # ``return helper(x)`` in a function whose result is backpropagated
        return bool(receivers) and bool(flow.derived(receivers) & parts[1])

    def _result_names(self, call: ast.Call, scope: ast.AST) -> set[str]:
        """Names the result of ``call`` is assigned to in ``scope``."""
        table = self._call_targets.get(id(scope))
        if table is None:
            table = self._call_targets[id(scope)] = {}
            for store in self.facts.stores_inside(scope):
                if isinstance(store, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and store.value is not None:
                    targets = store.targets if isinstance(store, ast.Assign) else [store.target]
                    names = {n for t in targets for n in _flat_names(t)}
                    for inner in self.facts.calls_of(store):
                        table[id(inner)] = names
        return table.get(id(call), set())


def _flat_names(target: ast.AST) -> list[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _flat_names(e)]
    if isinstance(target, ast.Starred):
        return _flat_names(target.value)
    name = dotted(target)
    return [name] if name else []
