"""Which links a CommonMark renderer would make of a text (the oracle of the Markdown-injection tests)."""

from __future__ import annotations

import re


def live_links(markdown: str) -> list[str]:
    """Links or autolinks a CommonMark renderer would make: read left to right as CommonMark does,
    a backslash escapes the next character, a run of n backticks opens a code span closed by the next
    run of exactly n (nothing inside is Markdown), a run with no closer is literal text."""
    text, index, length = [], 0, len(markdown)
    while index < length:
        char = markdown[index]
        if char == "\\" and index + 1 < length:
            text.append("_")
            index += 2
        elif char == "`":
            run = len(markdown[index:]) - len(markdown[index:].lstrip("`"))
            closer = re.compile(rf"(?<!`)`{{{run}}}(?!`)").search(markdown, index + run)
            if closer is None:
                text.append("_" * run)
                index += run
            else:
                text.append(" ")
                index = closer.end()
        else:
            text.append(char)
            index += 1
    plain = "".join(text)
    return re.findall(r"\[[^\]\n]*\]\([^)\s]*\)|<https?://[^>\s]*>", plain)
