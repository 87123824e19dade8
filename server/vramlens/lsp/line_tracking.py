"""Keep recorded lines on the right lines of an edited document, or say that they changed.

A capture names lines of the file as it ran. While the user edits, each annotated line is
followed through the edits: lines inserted or removed above move it, a line whose text no longer
matches what was recorded is stale, a deleted line is gone. A figure is never shown on a line
that is not the one it was measured on. Pure: positions are 0-based lines and code-point columns.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass
class Anchor:
    recorded: int  # 0-based line in the file the capture was taken from
    text: str | None  # that line's text (stripped) when the capture was loaded
    current: int  # 0-based line in the document's current text
    stale: bool = False
    gone: bool = False


def split_lines(text: str) -> list[str]:
    """Lines without their endings, as LSP counts them (a trailing newline starts an empty last line)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


class LineTracker:
    def __init__(self, recorded: dict[int, str | None], recorded_lines: list[str], current_lines: list[str]):
        """``recorded``: 0-based line -> its stripped text; ``recorded_lines``: the file the capture
        was matched against (on disk); ``current_lines``: the document as the editor has it."""
        self.lines = list(recorded_lines)
        self.anchors = [Anchor(line, text, line) for line, text in sorted(recorded.items())]
        for anchor in self.anchors:
            anchor.stale = not self._matches(anchor, anchor.current)
        if current_lines != self.lines:
            self.replace_all(current_lines)

    def _matches(self, anchor: Anchor, line: int) -> bool:
        return anchor.text is not None and 0 <= line < len(self.lines) and self.lines[line].strip() == anchor.text

    # -- edits --------------------------------------------------------------------------------
    def apply_change(self, start: tuple[int, int], end: tuple[int, int], new_text: str) -> None:
        """One incremental change: the text between ``start`` and ``end`` (line, column) becomes ``new_text``."""
        (start_line, start_col), (end_line, end_col) = start, end
        end_line = min(end_line, len(self.lines) - 1)
        start_line = min(start_line, end_line)
        head = self.lines[start_line][:start_col]
        tail = self.lines[end_line][end_col:]
        inserted = split_lines(head + new_text + tail)
        self.lines[start_line:end_line + 1] = inserted
        delta = len(inserted) - (end_line - start_line + 1)
        region = range(start_line, start_line + len(inserted))
        for anchor in self._live():
            line = anchor.current
            if line < start_line:
                continue
            if line > end_line:
                anchor.current = line + delta
                continue
            if not new_text and (start_line, start_col) <= (line, 0) and (end_line, end_col) >= (line + 1, 0):
                anchor.gone = True  # the whole line was deleted
                continue
            pushed = (start_line, start_col) <= (line, 0)  # the edit began before the line's text: it moved down
            preferred = min(max(line + delta if pushed else line, region.start), region.stop - 1)
            anchor.current = self._nearest_match(anchor, region, preferred)
        self._settle()

    def replace_all(self, new_lines: list[str]) -> None:
        """A whole new text (full sync, reload): follow lines through a line diff."""
        matcher = difflib.SequenceMatcher(None, self.lines, new_lines, autojunk=False)
        blocks = matcher.get_opcodes()
        for anchor in self._live():
            for tag, i1, i2, j1, j2 in blocks:
                if not i1 <= anchor.current < i2:
                    continue
                if tag == "equal":
                    anchor.current = j1 + anchor.current - i1
                elif tag == "replace":
                    anchor.current = j1 + min(anchor.current - i1, j2 - j1 - 1)
                else:  # "delete"
                    anchor.gone = True
                break
        self.lines = list(new_lines)
        self._settle()

    # -- results ------------------------------------------------------------------------------
    def positions(self) -> list[Anchor]:
        """The anchors still in the document, one per current line, in line order."""
        return sorted(self._live(), key=lambda a: a.current)

    def _live(self) -> list[Anchor]:
        return [anchor for anchor in self.anchors if not anchor.gone]

    def _nearest_match(self, anchor: Anchor, region: range, preferred: int) -> int:
        matches = [line for line in region if self._matches(anchor, line)]
        return min(matches, key=lambda line: abs(line - preferred)) if matches else preferred

    def _settle(self) -> None:
        """Re-check every line's text; where two anchors share a line, the matching one stays."""
        taken: dict[int, Anchor] = {}
        for anchor in self._live():
            anchor.stale = not self._matches(anchor, anchor.current)
            other = taken.get(anchor.current)
            if other is None:
                taken[anchor.current] = anchor
            elif other.stale and not anchor.stale:
                other.gone = True
                taken[anchor.current] = anchor
            else:
                anchor.gone = True
