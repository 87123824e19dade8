"""What a function of the file does with its parameters, as its callers need to know it.

Computed by walking the function once, with each parameter carrying its own label; callers then
substitute what they pass. A summary says which parameters flow into the returned value (and whether
the function makes graph of its own), and which parameters it keeps somewhere that outlives the call
(``self.sum += val``, ``self.history.append(out)``, ``cache[key] = x.clone()``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

GRAPH = "G"  # carries autograd history (a non-leaf tensor with grad_fn, or a container of them)
MAYBE_GRAPH = "g"  # computed from graph by code this file cannot see (``accuracy(out, y)``): may or may not
LEAF = "L"  # a leaf that requires grad (a parameter): keeping it keeps no graph, computing with it makes one
PARAMETER = "@"  # prefix of a parameter's own label

Labels = frozenset
EMPTY: Labels = frozenset()
GRAPH_ONLY: Labels = frozenset({GRAPH})
MAYBE_ONLY: Labels = frozenset({MAYBE_GRAPH})
LEAF_ONLY: Labels = frozenset({LEAF})


def parameter_label(name: str) -> str:
    return PARAMETER + name


def parameters_in(labels: Labels) -> list[str]:
    return [label[1:] for label in labels if label.startswith(PARAMETER)]


def computed(labels: Labels) -> Labels:
    """What a tensor operation on values with ``labels`` gives: a leaf becomes graph (``p * 2`` has a grad_fn)."""
    if LEAF in labels:
        return (labels - LEAF_ONLY) | GRAPH_ONLY
    return labels


def unseen(labels: Labels) -> Labels:
    """What code this file cannot see makes of values with ``labels``: graph in, maybe graph out."""
    if GRAPH in labels or LEAF in labels:
        return (labels - _KNOWN) | MAYBE_ONLY
    return labels


_KNOWN = frozenset({GRAPH, LEAF})


@dataclass(frozen=True)
class Effect:
    """The function keeps the value of one of its parameters in ``place``."""

    code: str  # the finding a graph-carrying argument gets at the call site (VL101, VL102, VL103, VL105)
    place: str  # where it is kept, as written in the function (``self.sum``)
    how: str  # "adds it to", "appends it to", "stores it in"
    function: str  # the function's qualified name, for the message


@dataclass
class Summary:
    returns: Labels = EMPTY
    # When every ``return`` returns a tuple of the same length: what each position may hold.
    elements: tuple[Labels, ...] | None = None
    _mixed: bool = False  # some return is not such a tuple
    effects: dict[str, list[Effect]] = field(default_factory=dict)  # parameter -> what keeps it
    detaches: set[str] = field(default_factory=set)  # parameters detached in place (``h.detach_()``)
    # Where graph went into a dict it returns (flow/origins.py): by position of the returned tuple, None for the
    # returned value itself.
    origins: dict[int | None, frozenset] = field(default_factory=dict)

    def add_return(self, labels: Labels, elements: list[Labels] | None) -> None:
        self.returns = self.returns | labels
        if elements is None:
            self._mixed = True
            self.elements = None
        elif not self._mixed:
            if self.elements is None:
                self.elements = tuple(elements)
            elif len(self.elements) == len(elements):
                self.elements = tuple(a | b for a, b in zip(self.elements, elements))
            else:
                self._mixed, self.elements = True, None

    def add_origins(self, position: int | None, origins: frozenset) -> None:
        if origins:
            self.origins[position] = self.origins.get(position, frozenset()) | origins

    def signature(self) -> tuple:
        """A stable description, for keys of cached results that depend on this summary."""
        return (
            tuple(sorted(self.returns)),
            None if self.elements is None else tuple(tuple(sorted(e)) for e in self.elements),
            tuple(sorted((p, tuple((e.code, e.place, e.how, e.function) for e in effects)) for p, effects in self.effects.items())),
            tuple(sorted(self.detaches)),
            tuple(sorted((-1 if p is None else p, tuple(sorted(o))) for p, o in self.origins.items())),
        )
