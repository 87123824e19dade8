"""take_census: one walk over the live objects, then the roles in order, then the JSON data."""

from __future__ import annotations

import contextlib
import gc
import os
import threading
import time

from . import autograd_graphs, caches, encode, frame_locals, holder_groups, holders, modules, optimizers
from .budget import Budget
from .graph import Graph, is_a, mro, type_name
from .inventory import Inventory
from .roots import Roots
from .threads import Frames, UserCode

CENSUS_FORMAT = "vramlens-census"
CENSUS_VERSION = 1
MAX_TENSORS = 20_000
_AGENT_FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ONE_AT_A_TIME = threading.Lock()  # the OOM observer, the peak watcher and SIGUSR1 may ask at once

# What the scan sorts objects into.
_OTHER, _TENSOR, _MODULE, _OPTIMIZER, _CACHE = range(5)


def on_cuda(tensor) -> bool:
    return tensor.is_cuda


def take_census(torch, moment: str, *, budget_s: float = 1.0, extra_roots: dict | None = None,
                device_filter=on_cuda, source_root: str | None = None, is_user_file=None,
                device: int | None = None, max_tensors: int = MAX_TENSORS) -> dict:
    """The census of the live tensors at ``moment`` (oom | peak | end | on_demand).

    ``device_filter(tensor)`` chooses the tensors counted (CUDA ones by default); ``extra_roots``
    names further roots a holder may be found from (a notebook's ``Out``, ``_``); user code is
    the files under ``source_root`` (or those ``is_user_file(filename)`` accepts); ``device``:
    the CUDA device whose allocated and reserved bytes are recorded. Never raises: what fails
    or does not fit in the budget is left out and said so in ``skipped``.
    """
    budget = Budget(budget_s)
    census = {"format": CENSUS_FORMAT, "version": CENSUS_VERSION, "moment": moment, "epoch": time.time(),
              "budget_s": budget.seconds}
    if not _ONE_AT_A_TIME.acquire(timeout=max(budget.seconds, 0.1) * 2):
        budget.skip("Another census was still running, so this one was not taken.")
        return _finish(census, budget)
    collecting = gc.isenabled()
    gc.disable()  # a collection now could run finalisers that free memory mid-count
    try:
        with _subclass_functions_off(torch):
            _Census(torch, budget, census, extra_roots, device_filter, UserCode(source_root, is_user_file),
                    device, max_tensors).run()
    except Exception as error:  # whatever happened, the user's program goes on
        budget.skip(f"The census stopped early ({type(error).__name__}: {_text(error)}).")
    finally:
        if collecting:
            gc.enable()
        _ONE_AT_A_TIME.release()
    return _finish(census, budget)


def _finish(census: dict, budget: Budget) -> dict:
    census.update(duration_s=round(budget.elapsed(), 4), complete=budget.complete,
                  skipped=budget.skipped, notes=budget.notes)
    for name, empty in encode.empty_tables().items():  # a census cut short still has every table
        census.setdefault(name, empty)
    return census


def _text(error: BaseException) -> str:
    try:
        return str(error)[:300]
    except Exception:
        return "no message"


def _attribute(owner, name: str):
    """``owner.name``, or None when it is missing or cannot be read (a stand-in or broken torch)."""
    try:
        return getattr(owner, name, None)
    except Exception:
        return None


def _subclass_functions_off(torch):
    """Reading a tensor subclass' metadata must not run its __torch_function__ (user code)."""
    disable = _attribute(_attribute(torch, "_C"), "DisableTorchFunctionSubclass")
    return disable() if disable is not None else contextlib.nullcontext()


class _Census:
    # Slots: the census' own attributes must never show up as referrers of the user's objects.
    __slots__ = ("torch", "budget", "out", "extra_roots", "user_code", "device", "max_tensors", "tensor_type",
                 "parameter_type", "module_type", "optimizer_type", "inventory", "modules", "optimizers", "caches",
                 "own_ids", "graph", "frames", "param_names", "module_paths", "device_filter")

    def __init__(self, torch, budget: Budget, out: dict, extra_roots, device_filter, user_code: UserCode,
                 device, max_tensors: int):
        self.torch, self.budget, self.out = torch, budget, out
        self.extra_roots, self.user_code, self.device, self.max_tensors = extra_roots, user_code, device, max_tensors
        nn, optim = _attribute(torch, "nn"), _attribute(torch, "optim")
        self.tensor_type = _attribute(torch, "Tensor")
        self.module_type = _attribute(nn, "Module")
        self.parameter_type = _attribute(nn, "Parameter")
        self.optimizer_type = _attribute(optim, "Optimizer")
        self.inventory = Inventory(device_filter)
        self.device_filter = device_filter
        self.modules: list = []
        self.optimizers: list = []
        self.caches: list = []
        self.own_ids = {id(self.modules), id(self.optimizers), id(self.caches), id(self.inventory.objects)}
        self.graph = Graph(self.tensor_type, self.own_ids)
        self.frames: Frames | None = None
        self.param_names: dict = {}  # id(parameter) -> (root module index, name)
        self.module_paths: dict = {}  # id(submodule that is a cache) -> (root module index, path)

    def run(self) -> None:
        out = self.out
        out["device"] = self._device_figures()
        self._phase("the thread facts", self._threads)
        self._phase("the object scan", self._scan)
        if self.tensor_type is None:
            self.budget.skip("This torch has no Tensor type, so no tensors could be found.")
        roots = self._phase("the named roots", lambda: Roots(self.frames, self.user_code, self.extra_roots))
        names = roots.names_for() if roots is not None else {}
        if roots is not None:
            self.graph.namespaces.update(roots.module_names)
        inventory, graph = self.inventory, self.graph
        root_modules = self._phase("the modules", self._modules) or []
        entries = self._phase("the optimizers", self._optimizers) or []
        cache_entries = self._phase("the caches", self._caches) or []
        local_entries = []
        if roots is not None:
            local_entries = self._phase("the frames' locals", lambda: frame_locals.claim(
                inventory, frame_locals.describe_locals(graph, inventory, roots.user_frames))) or []
        holder_entries = []
        if roots is not None:
            holder_entries = self._phase("the holder search", lambda: self._holders(roots)) or []
        leftover = inventory.unclaimed()
        for index in leftover:
            inventory.claim(index, "unreached", None)
        graphs = self._phase("the autograd graphs", lambda: autograd_graphs.walk_graphs(
            self.torch, inventory, self.budget, self.device_filter))
        listing = encode.Listing(inventory, self.max_tensors)

        def tables() -> dict:  # all of them or none: they refer to each other
            found = encode.summary(inventory, listing)
            found["tensors"], found["storages"] = encode.tensors_and_storages(inventory, listing)
            found["modules"] = encode.modules(listing, root_modules, names)
            found["optimizers"] = encode.optimizers(listing, entries, names)
            found["caches"] = encode.caches(listing, cache_entries, names)
            found["frame_locals"] = encode.frame_locals(listing, local_entries)
            found["holders"] = encode.holders(listing, holder_entries)
            found["unreached"] = encode.unreached(listing, inventory, leftover)
            if graphs is not None:
                found["graphs"] = encode.graphs(listing, graphs)
            return found

        out.update(self._phase("the listing", tables) or {})
        if inventory.without_storage:
            out["without_storage"] = dict(inventory.without_storage)
            self.budget.note(f"{sum(inventory.without_storage.values())} tensors have no storage of their own "
                             "(sparse, nested or wrapper subclasses) and are counted through the tensors they wrap.")
        if listing.tensor_at and len(listing.tensor_at) < len(inventory.facts):
            self.budget.note(f"The largest {len(listing.tensor_at)} of {len(inventory.facts)} tensors are listed; "
                             "the totals cover all of them.")

    def _phase(self, name: str, step):
        try:
            return step()
        except Exception as error:
            self.budget.skip(f"{name[0].upper()}{name[1:]} failed ({type(error).__name__}: {_text(error)}).")
            return None

    def _device_figures(self) -> dict | None:
        if self.device is None:
            return None
        try:
            cuda = _attribute(self.torch, "cuda")
            return {"index": int(self.device), "allocated": int(cuda.memory_allocated(self.device)),
                    "reserved": int(cuda.memory_reserved(self.device))}
        except Exception:
            return None

    # -- the thread, its grad mode, the main thread's stack --------------------------------
    def _threads(self) -> None:
        self.frames = Frames(_AGENT_FOLDER)
        self.own_ids.update(id(chain) for chain in self.frames.by_thread.values())
        self.out["thread"] = self.frames.thread_facts()
        stack, omitted = self.frames.main_stack()
        self.out["main_stack"], self.out["main_stack_omitted"] = stack, omitted
        torch = self.torch
        mode = {}
        for key, name in (("grad_enabled", "is_grad_enabled"), ("inference_mode", "is_inference_mode_enabled")):
            try:
                mode[key] = bool(_attribute(torch, name)())
            except Exception:
                mode[key] = None
        self.out["grad_mode"] = mode

    # -- the one pass over every object ---------------------------------------------------
    def _scan(self) -> None:
        objects = gc.get_objects()
        self.out["objects_scanned"] = len(objects)
        # Sorting a million objects one by one in Python is the slow part: sort their types
        # (a few thousand) instead, then keep the objects of the interesting ones in one pass.
        kinds = {cls: self._kind_of(cls) for cls in set(map(type, objects))}
        interesting = {cls for cls, kind in kinds.items() if kind != _OTHER}
        found = [obj for obj in objects if type(obj) in interesting]
        del objects
        add = self.inventory.add
        for position, obj in enumerate(found):
            cls = type(obj)
            kind = kinds[cls]
            if kind == _TENSOR:
                add(obj, self._tensor_class(cls))
            elif kind == _MODULE:
                self.modules.append(obj)
            elif kind == _OPTIMIZER:
                self.optimizers.append(obj)
            else:
                self.caches.append(obj)
            if not position & 0x3FF and self.budget.scan_spent():
                self.budget.skip(f"The object scan stopped after {position} of {len(found)} tensors, modules, "
                                 "optimizers and caches (past three times the time budget).")
                break
        del found

    def _kind_of(self, cls) -> int:
        try:
            order = mro(cls)
            if self.tensor_type is not None and self.tensor_type in order:
                return _TENSOR
            if type in order:
                return _OTHER
            if self.module_type is not None and self.module_type in order:
                return _MODULE
            if self.optimizer_type is not None and self.optimizer_type in order:
                return _OPTIMIZER
            return _CACHE if caches.is_cache_class(cls) else _OTHER
        except Exception:
            return _OTHER

    def _tensor_class(self, cls) -> str | None:
        if cls is self.tensor_type or cls is self.parameter_type:
            return None
        return type_name(cls)

    # -- the roles, in order ------------------------------------------------------------
    def _modules(self) -> list:
        roots = modules.find_roots(self.graph, self.modules)
        found = modules.name_tensors(self.graph, self.inventory, roots, caches.is_cache_class)
        modules.claim(self.inventory, found)
        for owner, root in enumerate(found):
            for entry in root.parameters:
                self.param_names[id(self.inventory.objects[entry.tensor])] = (owner, entry.name)
            for path, submodule in root.cache_modules:
                self.module_paths[id(submodule)] = (owner, path)
        return found

    def _optimizers(self) -> list:
        entries = optimizers.describe(self.graph, self.inventory, self.optimizers, self.param_names)
        optimizers.claim(self.inventory, entries)
        return entries

    def _caches(self) -> list:
        module_type = self.module_type
        optimizer_type = self.optimizer_type

        def closed(obj) -> bool:
            cls = type(obj)
            return (module_type is not None and is_a(obj, module_type) and not caches.is_cache_class(cls)) \
                or (optimizer_type is not None and is_a(obj, optimizer_type))

        cache_objects = self.caches + [module for module in self.modules if caches.is_cache_class(type(module))]
        self.own_ids.add(id(cache_objects))
        entries = caches.describe(self.graph, self.inventory, cache_objects, closed,
                                  self.module_paths, self.budget)
        caches.claim(self.inventory, entries)
        return entries

    def _holders(self, roots) -> list:
        inventory = self.inventory
        inside = self._phase("the graphs of the claimed tensors", lambda: autograd_graphs.inside_claimed_graphs(
            self.torch, inventory, self.budget, self.device_filter)) or set()
        targets = set(inventory.unclaimed()) - inside
        if not targets:
            if inside:
                self.out["holder_search"] = {"sought": 0, "inside_graphs": len(inside)}
            return []
        self.own_ids.update(id(value) for value in (self.frames.by_thread, roots.user_frames))
        search = holders.HolderSearch(self.graph, inventory, self.budget, self.frames, self.own_ids, _OWN_TYPES)
        search.walk(roots.tiers, targets)
        reached_by_walk = len(search.found)
        if len(search.found) < len(targets):
            search.search_referrers()
        entries = holder_groups.claim(inventory, holder_groups.Grouping(search).holders())
        missing = len(targets) - len(search.found)
        self.out["holder_search"] = {"sought": len(targets), "inside_graphs": len(inside), "reached_by_walk": reached_by_walk,
                                     "reached_by_referrers": len(search.found) - reached_by_walk,
                                     "not_reached": missing, "walk_cut": search.cut, "walk_nodes": len(search.parents)}
        if missing and self.budget.spent():
            self.budget.skip(f"The holder search stopped at the time budget: {missing} tensors were not traced to a holder.")
        elif missing:
            self.budget.note(f"{missing} tensors are held by nothing the census could name (C++ structures, "
                             "or objects about to be collected).")
        return entries


_OWN_TYPES = (modules.RootModule, modules.Named, optimizers.OptimizerEntry, optimizers.StateTensor,
              caches.CacheEntry, frame_locals.LocalEntry, holder_groups.Holder, holders.HolderSearch, _Census, Inventory,
              Graph)
