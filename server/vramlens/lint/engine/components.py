"""The parts of a file that can be analysed apart: chunks linked by the names they share.

A chunk that reads a name another chunk binds at module level (a function it calls, a class it builds
or subclasses, a module kept in a global) is analysed together with it, and so on transitively. Header
chunks (imports, the docstring) belong to every part. Each part's results depend only on the text of
its own chunks and of the header (and on the file-wide facts in the part's key), so after an edit only
the part that holds the edited chunk is analysed again.
"""

from __future__ import annotations

from .chunks import Chunk


def components(chunks: list[Chunk]) -> list[list[int]]:
    """Indexes of the non-header chunks, grouped into parts, each part in file order."""
    body = [i for i, chunk in enumerate(chunks) if not chunk.header]
    parent = {i: i for i in body}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    definers: dict[str, list[int]] = {}
    for i in body:
        for name in chunks[i].defines:
            definers.setdefault(name, []).append(i)
    for i in body:
        for name in chunks[i].uses:
            for j in definers.get(name, ()):
                if j != i:
                    a, b = find(i), find(j)
                    if a != b:
                        parent[a] = b
    groups: dict[int, list[int]] = {}
    for i in body:
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda group: group[0])
