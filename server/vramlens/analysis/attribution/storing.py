"""The line that keeps the memory: the statement of the user's code that stores into a holder.

The census names what holds the memory (``model.val_outputs``, ``__main__.all_logits``, a
function's local ``features``) and the trace names the line that allocated it (``logits =
model(x)``). The line to change is neither: it is the statement that puts each step's tensors into
the holder (``self.val_outputs.append(logits)``). It is found by joining the two with the static
facts of the user's files (analysis/attribution/store_facts.py):

1. a named holder: the statements storing into that name (its last attribute for an object's
   attribute, the name itself in its function for a local);
2. growth no holder names (a running sum, the end of a run that let go of its list): the data flow
   from the allocation line — the names it binds, one assignment further — into a statement in the
   same loop that stores them into something else;
3. growth the backward pass made (the autograd engine's thread has no Python frame: gradients): the
   statements in the loop that calls ``backward()`` that store what reads a gradient (``p.grad``),
   directly or one assignment further.

Two different containers fed by the same line, or a name stored into in several files, are not
guessed between: no storing line is given then, and the analysis says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.analysis.load.sources import SourceResolver, place_of
from vramlens.analysis.model import Holder, LineStat, StoringLine

TYPE_CHECKING = False  # typing's flag without importing typing (2 ms of start-up); type checkers read it the same
if TYPE_CHECKING:
    from vramlens.analysis.attribution.store_facts import FileFacts, Store

MIB = 1 << 20
MIN_KEPT = MIB  # a holder keeping less is not worth a line of advice
ACCUMULATING = ("append", "extend", "update", "augmented", "item", "concat", "setattr", "built")
MAX_FILES = 40  # user files read for one analysis


@dataclass(frozen=True)
class _Name:
    """What a holder's root says about the name the user's code stores into."""

    leaf: str  # the name a store's target ends with: "val_outputs", "all_logits", "features"
    qualified: bool  # an attribute of an object (matched by its last part) rather than a bare name
    function: str | None  # a frame local's function, else None
    file: str | None  # a frame local's recorded file


def holder_name(holder: Holder) -> _Name | None:
    """``model.val_outputs`` -> val_outputs (an attribute); ``__main__.all_logits`` -> all_logits;
    ``local features in main (x.py:46)`` -> features in main; unnamed roots (a frame's locals) -> None."""
    root = holder.root
    if holder.kind == "frame" and root.startswith("local ") and " in " in root:
        name, rest = root[len("local "):].split(" in ", 1)
        function = rest.split(" (", 1)[0]
        if name.isidentifier():
            return _Name(name, False, function, holder.created_at[0] if holder.created_at else None)
        return None
    if holder.kind in ("locals", "cache", "traceback") or " " in root or "," in root:
        return None
    path = root.split("[", 1)[0]  # a dict's entry: the dict
    parts = [part for part in path.split(".") if part]
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    if parts[0] == "__main__" or len(parts) == 1:
        return _Name(parts[-1], False, None, None)
    return _Name(parts[-1], True, None, None)


class SourceFacts:
    """Facts of the user's files, parsed once each, read through the resolver's safety checks."""

    def __init__(self, resolver: SourceResolver):
        self.resolver = resolver
        self._facts: dict[str, FileFacts | None] = {}

    def of(self, recorded: str) -> FileFacts | None:
        if recorded not in self._facts:
            if len(self._facts) >= MAX_FILES:
                return None
            lines = self.resolver.source_lines(recorded)
            self._facts[recorded] = _file_facts(lines) if lines is not None else None
        return self._facts[recorded]


def _file_facts(lines: list[str]) -> FileFacts:
    # Imported only when a user file is here: most captures are analysed away from their sources.
    from vramlens.analysis.attribution.store_facts import file_facts

    return file_facts("\n".join(lines))


def _matches(store: Store, name: _Name, methods: set) -> bool:
    if store.kind not in ACCUMULATING or store.leaf != name.leaf or store.method in methods:
        return False  # `bank.add(f)` of a class of yours is a call into your code, not a container's store
    if name.qualified:
        return "." in store.target  # self.val_outputs, model.val_outputs: an attribute of that name
    if store.target != name.leaf:
        return False
    return name.function is None or name.function in store.functions  # a closure inside it stores into it too


def _bound_at(facts: FileFacts, line: int | None) -> set[str]:
    if line is None:
        return set()
    return {name for binding in facts.bindings if binding.line <= line <= binding.end_line for name in binding.names}


def _pick(stores: list[Store], fed: set[str]) -> list[Store]:
    """The stores in order of how surely they keep the holder's tensors: the one that reads what the
    allocation line bound first, then those inside a loop."""
    return sorted(stores, key=lambda store: (store.moves_off, not (store.reads & fed), store.loop is None, store.line))


def _files(holder: Holder, lines: list[LineStat], sources: SourceFacts) -> list[str]:
    """Recorded user files to search: the holder's own first, then every file a user line is in, then (in a
    notebook) every cell that ran: a cell that only fills a list allocates nothing itself."""
    ordered = [place[0] for place in (holder.appended_at, holder.created_at) if place]
    ordered += [line.path for line in lines if line.path is not None]
    cells = getattr(sources.resolver, "cells", None) if sources.resolver is not None else None
    ordered += [run.code_name for run in (cells.runs if cells is not None else ()) if run.code_name]
    return list(dict.fromkeys(ordered))


def store_for_holder(holder: Holder, lines: list[LineStat], sources: SourceFacts) -> tuple[str, list[Store]] | None:
    """(recorded file, its stores into the holder, surest first), when exactly one file has any."""
    name = holder_name(holder)
    if name is None:
        return None
    found = []
    for recorded in ([name.file] if name.file else _files(holder, lines, sources)):
        facts = sources.of(recorded)
        stores = [store for store in (facts.stores if facts else ()) if _matches(store, name, facts.methods)]
        own = _own_store(facts, holder, recorded, name)
        if own is not None:  # the allocating statement stores itself: `X.append({... .clone()})`, `X = cat([X, f])`
            stores = [own] + [store for store in stores if store.line != own.line]
        if stores:
            fed = _bound_at(facts, holder.appended_at[1]) if holder.appended_at and holder.appended_at[0] == recorded else set()
            found.append((recorded, _pick(stores, fed)))
    if len(found) != 1:
        return None  # nowhere, or in several files: not guessed
    return found[0]


def _own_store(facts: FileFacts | None, holder: Holder, recorded: str, name: _Name) -> Store | None:
    """The store made by the very statement that allocated what the holder keeps, when it stores into this
    holder: its name, or (for an object holding tensors in its attributes) an attribute of the object's class."""
    if facts is None or not holder.appended_at or holder.appended_at[0] != recorded:
        return None
    own = [store for store in facts.stores if store.line == holder.appended_at[1] and store.kind in ACCUMULATING
           and store.method not in facts.methods]
    fits = [store for store in own if store.leaf == name.leaf or (holder.kind == "object" and store.target.startswith("self."))]
    return fits[0] if len(fits) == 1 else None


def store_from_line(path: str, line: int, sources: SourceFacts) -> Store | None:
    """The statement that keeps what ``path:line`` allocated: the line itself when it grows a
    container (``X = torch.cat([X, v])``), else a store in the same loop of the same function that
    reads a name the line binds (or one assignment further). None when no store, or stores into
    two different containers, are found."""
    facts = sources.of(path)
    if facts is None:
        return None
    own = [store for store in facts.stores if store.line == line and store.kind in ACCUMULATING
           and store.method not in facts.methods]
    if len(own) == 1:
        return own[0]
    binding = next((b for b in facts.bindings if b.line <= line <= b.end_line), None)
    if binding is None or binding.loop is None:
        return None  # nothing bound, or not in a loop: nothing accumulates step after step
    names = set(binding.names)
    same_loop = [b for b in facts.bindings if b.function == binding.function and b.loop == binding.loop]
    for later in same_loop:  # one hop: `preds = logits.argmax(-1)` carries logits on
        if later.line > binding.line and later.reads & names:
            names |= set(later.names)
    stores = [store for store in facts.stores
              if store.kind in ACCUMULATING and store.function == binding.function and store.loop is not None
              and not store.moves_off and store.method not in facts.methods
              and _inside(store.loop, binding.line) and store.reads & names and store.target not in binding.names]
    targets = {store.target for store in stores}
    if len(targets) != 1:
        return None
    return _pick(stores, set(binding.names))[0]


def store_from_backward(recorded_files: list[str], sources: SourceFacts) -> tuple[str, int, Store] | None:
    """(file, line of the ``backward()`` call, the store) that keeps what a backward pass made: in the
    loop around a ``backward()`` call, a store of a value that reads a gradient (``grad_log.append([p.grad
    for p in params])``), or of a name bound from one (one assignment further). None when no such store,
    or stores into two different containers (in one file or several), are found."""
    found = []
    for recorded in recorded_files:
        facts = sources.of(recorded)
        if facts is None:
            continue
        for line, function, loop in facts.backwards:
            if loop is None:
                continue  # a backward outside a loop keeps nothing step after step
            names: set[str] = set()
            for binding in facts.bindings:  # in line order: `grads = [p.grad …]`, then `norms = grads`
                if binding.function == function and _inside(loop, binding.line) and (binding.reads_grad or binding.reads & names):
                    names |= set(binding.names)
            stores = [store for store in facts.stores
                      if store.kind in ACCUMULATING and store.function == function and _inside(loop, store.line)
                      and not store.moves_off and store.method not in facts.methods and store.target not in names
                      and (store.reads_grad or store.reads & names)]
            found += [(recorded, line, store) for store in stores]
    if len({(recorded, store.target) for recorded, _line, store in found}) != 1:
        return None
    return min(found, key=lambda hit: hit[2].line)


def _inside(loop: tuple[int, int], line: int) -> bool:
    return loop[0] <= line <= loop[1]


def storing_lines(holders: list[Holder], lines: list[LineStat], carriers: list[tuple[tuple, int]],
                  sources: SourceFacts, backward_growth: int = 0) -> tuple[list[StoringLine], str | None]:
    """The storing lines of the holders that keep memory and of the growth no holder explains, the
    grown ones first; and, when memory is kept but no storing line can be named, the sentence that says so.
    ``backward_growth``: the bytes of growth a completed run's backward made and let go of by its end
    (growth.py's frameless_at_peak), followed from the backward call when nothing else names a line."""
    resolver = sources.resolver
    found: dict[tuple[str, int], StoringLine] = {}
    unplaced = []
    for holder in holders:
        kept = holder.bytes + holder.graph_bytes
        if holder.kind == "cache" or kept < MIN_KEPT:
            continue
        hit = store_for_holder(holder, lines, sources)
        if hit is None:
            if holder_name(holder) is not None:
                unplaced.append(holder.root)
            continue
        recorded, stores = hit
        first = stores[0]
        holder.stored_at = (recorded, first.line)
        _add(found, StoringLine(
            holder=holder.root, target=first.target, kind=first.kind, path=recorded, line=first.line, bytes=kept,
            growth_bytes=holder.survivor_bytes or 0, allocated_at=_made_most(holder),
            others=sorted({store.line for store in stores[1:]} - {first.line}), found_by="holder",
            kept_from={key: size for key, size in holder.kept_lines.items() if key[0] is not None and size >= MIN_KEPT}),
             resolver)
    explained = {line.allocated_at for line in found.values()}
    # a holder whose graphs keep what another line made (a running sum keeps the forward's activations) explains
    # that line's growth too: it is not added to the same statement a second time
    kept_at: dict = {}
    for holder in holders:
        if holder.stored_at is not None:
            for key, size in holder.kept_lines.items():
                kept_at[key] = kept_at.get(key, 0) + size
    explained |= {key for key, size in carriers if kept_at.get(key, 0) >= 0.5 * size}
    for key, size in carriers[:3]:
        path, line = key
        if path is None or size < MIN_KEPT or key in explained:
            continue
        store = store_from_line(path, line, sources)
        if store is None:
            continue
        _add(found, StoringLine(holder=store.target, target=store.target, kind=store.kind, path=path, line=store.line,
                                bytes=size, growth_bytes=size, allocated_at=key, found_by="growth"), resolver)
    if not found and backward_growth >= MIN_KEPT:
        _from_backward(found, backward_growth, lines, sources)
    result = sorted(found.values(), key=lambda s: (-s.growth_bytes, -s.bytes))
    note = None
    if not result and unplaced:
        note = (f"No statement of your code that stores into {unplaced[0]} was found with confidence (none, or in "
                "several files): the line that allocated what it keeps is shown instead.")
    elif not result and backward_growth >= MIN_KEPT:
        note = ("What grew was made by the backward pass (it has no Python frame: gradients, most likely), and no "
                "statement of your code in the loop around backward() that keeps them was found with confidence.")
    elif not result and carriers and carriers[0][0][0] is not None:
        path, line = carriers[0][0]
        note = (f"No statement of your code that stores what {place_of(path, line, getattr(resolver, 'cells', None))} "
                "allocated was found with confidence: it may be kept inside a library (see its remedy), or stored "
                "in a way the analysis does not follow.")
    return result, note


def _made_most(holder: Holder) -> tuple[str, int] | None:
    """The user line that made most of what a holder keeps: for a running sum of losses, the forward whose
    activations its graph saved, not the line that adds to it."""
    user = {key: size for key, size in holder.kept_lines.items() if key[0] is not None and size}
    return max(user, key=user.get) if user else holder.appended_at


def _from_backward(found: dict, size: int, lines: list[LineStat], sources: SourceFacts) -> None:
    """Growth made with no Python frame (the backward's gradients): the store that keeps what reads them."""
    files = list(dict.fromkeys(line.path for line in lines if line.path is not None))
    hit = store_from_backward(files, sources)
    if hit is None:
        return
    recorded, backward_line, store = hit
    _add(found, StoringLine(holder=store.target, target=store.target, kind=store.kind, path=recorded, line=store.line,
                            bytes=size, growth_bytes=size, allocated_at=(recorded, backward_line), found_by="growth"),
         sources.resolver)


def _add(found: dict, storing: StoringLine, resolver: SourceResolver) -> None:
    if storing.allocated_at and not storing.kept_from:
        storing.kept_from = {storing.allocated_at: storing.bytes}
    key = (storing.path, storing.line)
    if key in found:
        kept = found[key]
        if storing.found_by == "growth" and kept.allocated_at != storing.allocated_at:
            # one statement keeps what several lines allocated (`out = model(x)`: the graph of out saves x)
            kept.bytes += storing.bytes
            kept.growth_bytes += storing.growth_bytes
            kept.kept_from.update(storing.kept_from)
        return
    storing.source = resolver.source_line(storing.path, storing.line)
    storing.local_path = resolver.local_path(storing.path)
    storing.cell = resolver.cell_ref(storing.path)
    found[key] = storing
