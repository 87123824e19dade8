"""How the editor words an analysis' identifiers for people. Pure."""

from __future__ import annotations

# The cause as a reader says it (the names are the analysis' identifiers, docs/analysis-json.md).
CAUSE_TEXT = {
    "working_set": "the live working set is too large",
    "retained_references": "tensors from earlier iterations stay referenced",
    "fragmentation": "the reserved memory is fragmented",
    "outside_allocator": "memory outside PyTorch's allocator left too little",
    "cached_not_leak": "reserved memory is PyTorch's cache, not a leak",
    "no_problem": "nothing to fix",
}


def cause_text(cause: str) -> str:
    return CAUSE_TEXT.get(cause, cause.replace("_", " "))
