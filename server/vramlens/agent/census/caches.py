"""Tensors held by cache objects: a library's KV cache (``transformers.cache_utils``' DynamicCache,
StaticCache and their layer objects) and any object whose class says it is a cache.

A cache is recognised by its class (a name ending in ``Cache``, or a class from a ``cache_utils``
or ``kv_cache`` module), and its tensors are found by walking its attributes, lists and dicts
(bounded), not by one library's private field names — so the layouts of different library
versions are all found. A cache found inside another cache counts as part of the outer one.
"""

from __future__ import annotations

import re
from collections import deque

from .graph import Graph, mro

DEPTH = 6  # references followed from a cache object
NODES = 5_000  # objects visited per cache (a model's KV cache is a few hundred)
_KV = re.compile(r"kv|key_?value|past_?key", re.IGNORECASE)


def _names(cls) -> list[tuple[str, str]]:
    try:
        return [(klass.__dict__.get("__module__"), klass.__name__) for klass in mro(cls)[:-1]
                if type(klass.__dict__.get("__module__")) is str]
    except Exception:
        return []


def is_cache_class(cls) -> bool:
    for module, name in _names(cls):
        if name.endswith("Cache") or "cache_utils" in module or "kv_cache" in module:
            return True
    return False


def cache_kind(cls) -> str:
    """kv_cache for the attention caches of generation, cache for any other."""
    for module, name in _names(cls):
        if "cache_utils" in module or _KV.search(name) or _KV.search(module):
            return "kv_cache"
    return "cache"


class CacheEntry:
    __slots__ = ("cache", "cls", "kind", "module_path", "tensors", "bytes", "truncated")

    def __init__(self, cache, module_path: tuple | None):
        cls = type(cache)
        self.cache = cache
        self.cls = cls
        self.kind = cache_kind(cls)
        self.module_path = module_path  # (root module index, path) when the cache is a submodule
        self.tensors: list[int] = []
        self.bytes = 0
        self.truncated = False


def describe(graph: Graph, inventory, caches: list, closed, module_paths: dict, budget) -> list[CacheEntry]:
    """``closed(obj)``: objects not walked into (modules, optimizers); ``module_paths``:
    id(submodule) -> (root index, path) for caches that are modules."""
    cache_ids = {id(cache) for cache in caches}
    walked, nested = [], set()
    for position, cache in enumerate(caches):
        if budget.spent():
            budget.skip(f"{len(caches) - position} cache objects were not walked within the time budget.")
            break
        entry = CacheEntry(cache, module_paths.get(id(cache)))
        _walk(graph, inventory, entry, cache, cache_ids, nested, closed)
        walked.append(entry)
    found = [entry for entry in walked if id(entry.cache) not in nested and entry.tensors]
    found.sort(key=lambda entry: len(entry.tensors), reverse=True)
    return found


def _walk(graph: Graph, inventory, entry: CacheEntry, cache, cache_ids: set, nested: set, closed) -> None:
    seen = {id(cache)}
    queue = deque([(cache, 0)])
    while queue:
        current, depth = queue.popleft()
        try:
            for _, _, child in graph.edges(current):
                if id(child) in seen or child is None:
                    continue
                seen.add(id(child))
                index = inventory.index(child)
                if index is not None:
                    entry.tensors.append(index)
                    continue
                if id(child) in cache_ids:
                    nested.add(id(child))
                if depth + 1 < DEPTH and graph.opens(child) and not closed(child):
                    if len(seen) >= NODES:
                        entry.truncated = True
                        return
                    queue.append((child, depth + 1))
        except Exception:  # a container changed while being read (another thread): keep what was found
            continue


def claim(inventory, entries: list[CacheEntry]) -> None:
    for owner, entry in enumerate(entries):
        for index in entry.tensors:
            entry.bytes += inventory.claim(index, "cache", owner)
