"""Where the failing request was made: the user line in its own stack, or, when the autograd
engine made it (its thread has no Python frame), the user line that started that work, taken
from the exception's traceback."""

from __future__ import annotations

from vramlens.analysis.model import RequestSite
from vramlens.analysis.replay.trace import NO_FRAME, frames_key
from vramlens.analysis.load.sources import USER, SourceResolver
from vramlens.units import format_bytes


def request_site(oom_frames: list | None, meta: dict, resolver: SourceResolver) -> RequestSite | None:
    key = frames_key(oom_frames, resolver)
    if key[0] is not None and key != NO_FRAME:
        path, line = key
        return RequestSite(path, line, resolver.source_line(path, line), autograd=False)
    if key != NO_FRAME:
        return None  # only library frames: nothing of the user's to point at
    for frame in reversed((meta.get("exception") or {}).get("frames") or []):
        path = frame.get("filename")
        if path and resolver.kind(path) == USER:
            line = frame.get("line")
            return RequestSite(path, line, resolver.source_line(path, line), autograd=True)
    return None


def site_sentence(site: RequestSite, request: int | None, resolver: SourceResolver) -> str:
    where = resolver.place(site.path, site.line)
    code = f" (`{site.source.strip()}`)" if site.source else ""
    size = f"{format_bytes(request)} " if request else ""
    if site.autograd:
        started = "the backward pass started" if site.source and "backward" in site.source else "the work started"
        return (f"The failing {size}request had no Python frame: the autograd engine made it during {started} "
                f"at {where}{code}.")
    return f"The failing {size}request was made at {where}{code}."
