"""The language server on stdin/stdout: a reader that finds its place again after bad input
(lsp/framing.py), and an answer for every request, even one whose params pygls cannot read.

This takes the place of pygls 2's ``start_io`` (pygls/server.py and pygls/io_.py), which it
follows otherwise: pygls' own writer, its stop event, its protocol for every message it reads.
pygls drops a request whose params do not structure (``textDocument/hover`` with ``params: []``,
a position at line -5) with a log line and no response; here such a request is answered with
the JSON-RPC error pygls raised for it (InvalidParams), so no client waits forever.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading

from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.io_ import StdoutWriter

from vramlens.lsp.framing import FrameReader

CHUNK = 1 << 16
logger = logging.getLogger(__name__)


def serve_stdio(server, stdin=None, stdout=None) -> int:
    """Run ``server`` (a pygls LanguageServer) over the process's stdin and stdout until exit; the
    exit code LSP asks for: 0 after ``shutdown`` then ``exit``, 1 for an ``exit`` without ``shutdown``."""
    server._stop_event = threading.Event()  # pygls' own: shutdown() sets it
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    code = 0
    try:
        asyncio.run(_serve(server, stdin or sys.stdin.buffer))
    except BrokenPipeError:
        logger.error("The connection to the client is lost; the server stops.")
    except KeyboardInterrupt:
        pass
    except SystemExit as ended:  # pygls' exit handler: 0 after shutdown, else 1
        code = ended.code if isinstance(ended.code, int) else 1
    finally:
        server.shutdown()
    return code


async def _serve(server, stdin) -> None:
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue = asyncio.Queue()
    # A thread of its own, a daemon: a read blocked on stdin never holds up the exit.
    threading.Thread(target=_read_stdin, args=(stdin, loop, chunks), name="vramlens-stdin", daemon=True).start()
    frames = FrameReader()
    while not server._stop_event.is_set():
        data = await chunks.get()
        if not data:
            return
        for body in frames.feed(data):
            handle_body(server.protocol, body)
        for problem in frames.problems:
            logger.warning("%s", problem)
        frames.problems.clear()


def _reader(stdin):
    """Read straight from the descriptor: a daemon thread blocked in a buffered reader holds its
    lock, and the interpreter aborts at exit when it cannot take it."""
    try:
        fd = stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return getattr(stdin, "read1", stdin.read)
    return lambda size: os.read(fd, size)


def _read_stdin(stdin, loop: asyncio.AbstractEventLoop, chunks: asyncio.Queue) -> None:
    read = _reader(stdin)
    while True:
        try:
            data = read(CHUNK)
        except (OSError, ValueError):
            data = b""
        try:
            loop.call_soon_threadsafe(chunks.put_nowait, data)
        except RuntimeError:  # the loop has closed: the server is gone
            return
        if not data:
            return


def handle_body(protocol, body: bytes) -> None:
    """One framed body: handed to pygls, or, when pygls cannot read it, answered with an error."""
    try:
        message = json.loads(body, object_hook=protocol.structure_message)
    except JsonRpcException as error:  # JSON, but not a message of its method (pygls has logged why)
        _answer_unreadable(protocol, body, error)
        return
    except (ValueError, RecursionError):
        logger.warning("Dropped a message that is not JSON (%d bytes).", len(body))
        return
    if getattr(message, "jsonrpc", None) != "2.0":
        _answer_unreadable(protocol, body, JsonRpcInvalidRequest())
        return
    try:
        protocol.handle_message(message)
    except Exception:  # noqa: BLE001 - pygls answers requests itself; this is the last net
        logger.exception("A message could not be handled.")


def _answer_unreadable(protocol, body: bytes, error: JsonRpcException) -> None:
    try:
        raw = json.loads(body)
    except (ValueError, RecursionError):
        return
    msg_id = raw.get("id") if isinstance(raw, dict) else None
    if isinstance(raw, dict) and "method" in raw and type(msg_id) in (int, str):
        method = raw.get("method")
        refusal = getattr(protocol, "lifecycle_refusal", lambda method: None)(method) if method != "initialize" else None
        error = refusal or error  # out of its time, that comes first: LSP's lifecycle error, not the params'
        logger.warning("Answered request %r (%s) with an error: %s.", msg_id, method if isinstance(method, str) else "?",
                       type(error).__name__)
        protocol._send_response(msg_id, None, error.to_response_error())
    else:
        logger.warning("Dropped a message that is not a request or notification pygls can read.")
