"""A line's whole call path, torch's own frames unfolded: what a hover shows when asked (its usual path
folds them into a count, `+4 torch frames`, as the report's Top lines do until a line is opened).
Pure (no pygls)."""

from __future__ import annotations

from vramlens.analysis.model import Analysis, LineStat
from vramlens.lsp.frame_links import FrameLinker, is_torch_frame, line_uri, split_frame
from vramlens.safe_text import one_line

TITLE = {True: "largest live stack", False: "first allocation"}  # as the line's folded path is titled


def whole_paths(analysis: Analysis) -> dict[tuple[str, int], str]:
    """(local file, 1-based line) -> the Markdown of the line's whole call path, for each line here whose
    path holds a torch frame (the others show theirs whole already)."""
    linker = FrameLinker(analysis.local_root, analysis.environment.get("torch"))
    paths: dict[tuple[str, int], str] = {}
    for stat in analysis.lines:
        frames = stat.live_call_path or stat.call_path
        if not stat.local_path or not stat.line or not any(is_torch_frame(split_frame(f)[0]) for f in frames):
            continue
        paths.setdefault((stat.local_path, stat.line), path_markdown(stat, linker))
    return paths


def path_markdown(stat: LineStat, linker: FrameLinker) -> str:
    """`**Whole call path** (largest live stack)` and every frame, the line's own first, each a link where found."""
    frames = stat.live_call_path or stat.call_path
    out = [f"**Whole call path** ({TITLE[bool(stat.live_call_path)]}, torch frames unfolded)  "]
    for number, frame in enumerate(frames, 1):
        path, line, function = split_frame(frame)
        uri = line_uri(stat.local_path, stat.line) if number == 1 else linker.uri(frame)
        where = _code(f"{path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{line}" if line else path)
        shown = f"[`{where}`]({uri})" if uri else f"`{where}`"
        out.append(f"{number}. {shown}" + (f" `{_code(function)}`" if function else ""))
    return "\n".join(out)


def _code(text: str) -> str:
    """A name from the capture inside `code`: one line, no backtick to close it early."""
    return one_line(text).replace("`", "'")
