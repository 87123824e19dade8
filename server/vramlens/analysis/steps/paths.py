"""Each allocation's Python call path, outermost first, as small interned integers.

A token stands for one (file, line) of Python code. C++ frames (``--stacks all``) are left out so
that both recording modes give the same paths; an allocation with no Python frame at all (the
autograd engine's thread during backward) gets the empty path, id 0.
"""

from __future__ import annotations

import re

_NATIVE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".cu", ".cuh")
# torch's own package: a loop found in there (over parameters, layers, tensors of a tuple) is a
# detail of one call, never the loop that drives the work.
_TORCH_PACKAGE = re.compile(r"(?:^|/)(?:site|dist)-packages/torch/|/torch/(?:nn|optim|autograd|utils|cuda|amp|"
                            r"distributed|fx|_[a-z_]+)/|/torch/(?:_tensor|functional|serialization|overrides)\.py$")


# Wrappers in torch that only call through (decorators for grad mode, autocast, error reporting):
# the loop that drives the work is inside them, so they are walked through.
_PASS_THROUGH = ("torch/utils/_contextlib.py", "torch/autograd/grad_mode.py", "torch/amp/autocast_mode.py",
                 "torch/distributed/elastic/multiprocessing/errors/__init__.py", "torch/_jit_internal.py")


def _python_frame(frame: dict) -> bool:
    filename = frame.get("filename") or "??"
    return filename != "??" and not filename.endswith(_NATIVE_SUFFIXES)


class CallPaths:
    """Interns frames into tokens and stacks into paths; one instance per analysed trace."""

    def __init__(self) -> None:
        self.frames: list[tuple[str, int, str]] = []  # token -> (filename, line, function)
        self.paths: list[tuple[int, ...]] = [()]  # path id -> tokens, outermost first; 0: no Python frame
        self._token_of: dict = {}
        self._path_of: dict = {(): 0}
        # (length, innermost, middle and outermost frame's identity) -> [(frames list, path id), ...]:
        # torch shares one dict per distinct frame, so a stack seen before compares equal element by
        # element on identity alone, without building a key of every frame.
        self._memo: dict = {}
        self._torch: dict[int, bool] = {}

    def path_ids(self, stacks: list) -> list[int]:
        """The path id of each frames list in ``stacks``. The loader gives every entry of one stack the
        same list (capture/stacks.py): each distinct list is interned once, the rest is lookups in C."""
        by_list = dict(zip(map(id, stacks), stacks))
        path_of = {key: self.path_id(frames) for key, frames in by_list.items()}
        return list(map(path_of.__getitem__, map(id, stacks)))

    def path_id(self, frames: list | None) -> int:
        if not frames:
            return 0
        size = len(frames)
        key = (size, id(frames[0]), id(frames[size >> 1]), id(frames[-1]))
        seen = self._memo.get(key)
        if seen is not None:
            for known, pid in seen:
                if known == frames:
                    return pid
        else:
            seen = self._memo[key] = []
        pid = self._intern([frame for frame in reversed(frames) if _python_frame(frame)])
        seen.append((frames, pid))
        return pid

    def _intern(self, frames: list[dict]) -> int:
        tokens = []
        for frame in frames:
            where = (frame.get("filename") or "??", frame.get("line") or 0)
            token = self._token_of.get(where)
            if token is None:
                token = self._token_of[where] = len(self.frames)
                self.frames.append((where[0], where[1], frame.get("name") or "?"))
            tokens.append(token)
        path = tuple(tokens)
        found = self._path_of.get(path)
        if found is None:
            found = self._path_of[path] = len(self.paths)
            self.paths.append(path)
        return found

    def in_torch(self, token: int) -> bool:
        """Whether the frame is torch's own code (a module call, an optimizer, autograd...)."""
        known = self._torch.get(token)
        if known is None:
            filename = self.frames[token][0].replace("\\", "/")
            known = self._torch[token] = bool(_TORCH_PACKAGE.search(filename)) and not filename.endswith(_PASS_THROUGH)
        return known

    def describe(self, token: int) -> str:
        filename, line, name = self.frames[token]
        return f"{filename}:{line} {name}"
