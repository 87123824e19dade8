"""Untrusted text (names, paths, sentences and sources from a capture) put into Markdown so that it
shows as the text it is: it can neither close the code span it sits in nor become a live link,
an image, an autolink or HTML, nor break a table row or a line of its own.

- ``code(text)``: a code span whose fence is longer than any run of backticks inside it;
- ``prose(text)``: text with every character that opens a link, an autolink, HTML or a code span
  escaped (``\\ ` [ ] < >``); emphasis characters are left alone: they cannot link anywhere;
- ``sentence(text)``: a sentence of our own that quotes sources as `code`: its well-formed single
  backtick spans stay code, everything else is prose;
- ``code_block(text)``: a fenced block whose fence no line inside can close;
- ``cell(markdown)``: any of those inside a table cell (``|`` escaped, as GFM tables need even in code).
"""

from __future__ import annotations

import re

from vramlens.safe_text import one_line, printable

_OPENS = re.compile(r"([\\`\[\]<>])")
_BACKTICKS = re.compile(r"`+")
_SPANS = re.compile(r"(`[^`]+`)")


def _longest_run(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)


def code(value) -> str:
    text = one_line("" if value is None else value)
    if not text:
        return ""
    fence = "`" * (_longest_run(text) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""  # Markdown strips one space each side
    return f"{fence}{pad}{text}{pad}{fence}"


def prose(value) -> str:
    return _OPENS.sub(r"\\\1", one_line("" if value is None else value))


def sentence(value) -> str:
    parts = _SPANS.split(one_line("" if value is None else value))
    return "".join(code(part[1:-1]) if index % 2 else prose(part) for index, part in enumerate(parts))


def code_block(value, info: str = "") -> str:
    text = printable("" if value is None else value).rstrip("\n")
    fence = "`" * max(3, _longest_run(text) + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def cell(markdown: str) -> str:
    return markdown.replace("|", "\\|")
