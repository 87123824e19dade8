"""The tensor census: what the live tensors are, and who holds them, at one moment of the run.

One call, :func:`take_census`, walks the live Python objects once and returns a plain
JSON-able dict (its shape is documented in docs/capture-format.md, "census.json"). It runs
inside the user's process — at the OOM, at the peak, at the end, on demand — so it imports
only the standard library and works on any torch >= 2.1; it never raises into the user's
program and keeps within a time budget, saying what it left out.

Modules, in the order the census uses them:
  budget      the time budget and the sentences about what was cut short
  graph       safe, named edges between Python objects (no user code runs)
  inventory   the tensors found, grouped by storage, and which role claimed each storage
  threads     threads, the main thread's stack, and the frames executing now
  modules     parameters, buffers and gradients, named by path from their root module
  optimizers  optimizer state, tied to its optimizer and parameter
  caches      tensors held by cache objects (KV caches and the like)
  roots       the named places a holder is found from (globals, locals, extra roots)
  holders     the search for what holds the remaining tensors: a walk from the named roots, then gc's referrers
  holder_groups  what it found, grouped by container, with the chain from a named root
  encode      the JSON shape
  take        take_census itself
"""

from .take import CENSUS_FORMAT, CENSUS_VERSION, take_census

__all__ = ["CENSUS_FORMAT", "CENSUS_VERSION", "take_census"]
