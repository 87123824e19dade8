"""Messages framed by ``Content-Length`` on a byte stream, read so that bad input never leaves it out of step.

pygls 2's reader trusts every header: after a ``Content-Length`` of ``abc``, ``-5`` or one too small,
or bytes that are not a header at all, it reads the next message's header as a body and never finds
its place again — nothing is answered after it, ``shutdown`` included. This reader:

- looks for each header block by its ``Content-Length:`` line (bytes before it are skipped, and
  other headers such as ``Content-Type`` are ignored);
- refuses a length that is not a decimal number, is zero, or exceeds MAX_BODY, and looks for the next header;
- gives up on a body as soon as it cannot be a message: it does not start with ``{`` or ``[``, or a
  header line turns up inside it (a length too large swallows the next message; raw ``\\r\\n`` cannot
  appear inside a JSON string, so ``Content-Length: N\\r\\n`` never belongs to a real body).

Pure: bytes in, bodies and problems out (lsp/stdio.py runs it on stdin).
"""

from __future__ import annotations

import re

MAX_BODY = 128 << 20  # a message larger than this is not one an editor sends
MAX_HEADER = 8 << 10  # a header block longer than this is garbage
_HEADER = re.compile(rb"Content-Length:[ \t]*([^\r\n]*)\r\n", re.IGNORECASE)
_HEADER_INSIDE = re.compile(rb"Content-Length:[ \t]*\d+\r\n", re.IGNORECASE)
_KEEP = len(b"Content-Length:") + 32  # the tail kept while no header is found: one may be arriving split
_FIRST_NON_BLANK = re.compile(rb"[^ \t\r\n]")
_WAIT, _ABANDONED = object(), object()  # what _next_body gives instead of a body


class FrameReader:
    def __init__(self) -> None:
        self._buffer = bytearray()
        self._length: int | None = None  # the body being read, once its header was accepted
        self._scanned = 0  # how much of the body being read was searched for a header already
        self._skipped: dict[str, int] = {}  # why -> bytes skipped during the current feed
        self.problems: list[str] = []  # one line each, for the log; the caller empties it

    def feed(self, data: bytes) -> list[bytes]:
        """The complete bodies ``data`` finishes, in order."""
        self._buffer += data
        bodies = []
        while self._length is not None or self._next_header():
            body = self._next_body()
            if body is _WAIT:
                break
            if body is not _ABANDONED:
                bodies.append(body)
        self.problems += [f"Skipped {count} bytes of input that were {why}." for why, count in self._skipped.items()]
        self._skipped.clear()
        return bodies

    def _skip(self, count: int, why: str) -> None:
        if count:
            self._skipped[why] = self._skipped.get(why, 0) + count
            del self._buffer[:count]

    def _next_header(self) -> bool:
        """True once a valid header block is consumed (its body is next)."""
        while True:
            match = _HEADER.search(self._buffer)
            if match is None:
                self._skip(max(len(self._buffer) - _KEEP, 0), "not a message header")
                return False
            value, line_length = bytes(match.group(1)).strip(), match.end() - match.start()
            self._skip(match.start(), "not a message header")  # the Content-Length line now starts the buffer
            end = self._buffer.find(b"\r\n\r\n", 0, MAX_HEADER)
            if end < 0:
                if len(self._buffer) < MAX_HEADER:
                    return False  # the rest of the header is still to come
                self._skip(line_length, "a header block that never ends")
                continue
            length = int(value) if value.isdigit() and len(value) <= 12 else None
            if length is None or not 0 < length <= MAX_BODY:
                self.problems.append(f"Refused a message header with Content-Length {value[:40]!r}; "
                                     "looking for the next one.")
                del self._buffer[:line_length]
                continue
            del self._buffer[:end + 4]
            self._length, self._scanned = length, 0
            return True

    def _next_body(self):
        """The body whose header was read, _WAIT for more bytes, or _ABANDONED when it cannot be one."""
        length = self._length
        # Found, not stripped: a copy of the buffer for each chunk of a 50 MB body would make reading it quadratic.
        first = _FIRST_NON_BLANK.search(self._buffer)
        if first is not None and self._buffer[first.start():first.start() + 1] not in (b"{", b"["):
            return self._abandon(0, "a body that is not JSON")
        inside = _HEADER_INSIDE.search(self._buffer, max(self._scanned - _KEEP, 0), min(len(self._buffer), length))
        if inside is not None:
            return self._abandon(inside.start(), "a body cut short by the next header (its Content-Length was too large)")
        self._scanned = min(len(self._buffer), length)
        if len(self._buffer) < length:
            return _WAIT
        body = bytes(self._buffer[:length])
        del self._buffer[:length]
        self._length = None
        return body

    def _abandon(self, upto: int, why: str):
        self._length = None
        self._skip(upto, why)
        if not upto:
            self.problems.append(f"Dropped {why}; looking for the next message header.")
        return _ABANDONED
