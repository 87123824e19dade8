"""What other files of the project say about the names this file imports from them (lint/project/ finds it).

Two kinds of facts, both keyed by how this file writes the name:

- ``ancestors``: for a class of this file whose bases (directly or through its own classes) include a class of
  the project, the bases that class stands on, qualified through the imports of the file that writes them
  (``pytorch_lightning.LightningModule``). The checks that recognise a framework or ``nn.Module`` by a base's
  name read them after the bases written here.
- ``module_classes``: classes of the project that are nn.Modules (by the evidence of the file that defines them),
  by the name this file calls them with.
- ``functions``: a function (or a method inherited from a class of the project) with the summary its own module's
  walk gave it, so that a call of it is judged as a call of a function of this file is.
- ``instance_methods``: the methods of a class of the project that this file builds, with their summaries.
- ``training``: functions and classes of the project that train (a backward pass, ``autograd.grad`` or an optimizer
  step in them or in what they call in their own file): a call of one is training work of this file.

A name the project cannot resolve has no entry: what cannot be seen stays unknown.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..parse.syntax import dotted


@dataclass(frozen=True)
class ProjectFunction:
    qualified: str  # ``pkg.metrics.accuracy``, ``pkg.base.BaseModule.shared_step``: for messages
    positional: tuple[str, ...]  # parameters bound by position (``self`` left out of a method's)
    keyword: tuple[str, ...]  # keyword-only parameters
    summary: object  # flow.summaries.Summary, computed by walking the function in its own module
    # Parameters it calls (``model(x)``): what a call returns depends on whether the caller passes a module,
    # which the walk in the function's own module could not know (a local function learns it from its callers).
    called_parameters: frozenset[str] = frozenset()
    # It runs a backward pass, autograd.grad or an optimizer step, itself or through what it calls in its file.
    trains: bool = False

    def binds(self, call: ast.Call) -> bool:
        """Every argument of the call lands on a named parameter: what goes to ``*args`` or ``**kwargs`` (or is
        unpacked into them) the summary says nothing about, so such a call stays unknown."""
        if len(call.args) > len(self.positional) or any(isinstance(a, ast.Starred) for a in call.args):
            return False
        names = set(self.positional) | set(self.keyword)
        return all(k.arg is not None and k.arg in names for k in call.keywords)

    def keeps_nothing_of(self, call: ast.Call) -> bool:
        """Its summary keeps none of the arguments of the call (no effect on the parameters they land on)."""
        return not any(self.summary.effects.get(parameter) for parameter, _ in self.bound_arguments(call))

    def bound_arguments(self, call: ast.Call) -> list[tuple[str, ast.AST]]:
        """(parameter, argument) pairs of a call of it (what CallGraph.bound_arguments gives a local call)."""
        pairs = [(p, a) for p, a in zip(self.positional, call.args) if not isinstance(a, ast.Starred)]
        names = set(self.positional) | set(self.keyword)
        pairs.extend((k.arg, k.value) for k in call.keywords if k.arg in names)
        return pairs


@dataclass
class ProjectFacts:
    ancestors: dict[str, tuple[str, ...]] = field(default_factory=dict)  # class of this file -> qualified bases
    functions: dict[str, ProjectFunction] = field(default_factory=dict)  # ``accuracy``, ``metrics.accuracy``
    methods: dict[tuple[str, str], ProjectFunction] = field(default_factory=dict)  # (class of this file, name)
    # Classes of other files that are nn.Modules by their own file's evidence, as this file calls them (``Net``,
    # ``models.Net``): ``model = Net()`` builds a module.
    module_classes: frozenset[str] = frozenset()
    # Classes of other files whose call runs with recording off (a forward under ``@torch.inference_mode()``):
    # what ``Wrapper(model)(x)`` returns carries no new graph.
    no_grad_classes: frozenset[str] = frozenset()
    # Functions and classes of other files that train (a class: one of its methods does), as this file calls them
    # (``train_one_epoch``, ``ModelTrainer``): handing a model to one may train it.
    training: frozenset[str] = frozenset()
    # Classes of other files that are nn.Modules whose only parameters are made frozen (``nn.Parameter(w,
    # requires_grad=False)``): calling one records no graph of its own (evidence.py, ``records_nothing``).
    frozen_classes: frozenset[str] = frozenset()
    # Classes of other files, as this file calls them, with their methods (their bases' too, nearest first):
    # ``meter = Accuracy(); meter.update(preds)`` is judged by what ``Accuracy.update`` does.
    instance_methods: dict[str, dict[str, ProjectFunction]] = field(default_factory=dict)
    signature: tuple = ()  # a stable description, for keys of cached results that depend on these facts


def project_ancestors(cls: ast.ClassDef, facts) -> tuple[str, ...]:
    """The qualified bases ``cls`` stands on through classes of other files of the project; () when none."""
    project = facts.project
    return project.ancestors.get(cls.name, ()) if project is not None else ()


def base_names(cls: ast.ClassDef, facts) -> list[str]:
    """The bases as written here, then those seen through the project's classes."""
    return [dotted(b) or "" for b in cls.bases] + list(project_ancestors(cls, facts))


def called_names(index) -> frozenset[str]:
    """Dotted names of the callees of a chunk's calls (``accuracy``, ``self.shared_step``), once per chunk."""
    if index.called is None:
        index.called = frozenset(name for call in index.all_calls if (name := dotted(call.func)))
    return index.called


__all__ = ["ProjectFacts", "ProjectFunction", "base_names", "called_names", "project_ancestors"]
