"""A cell's output leaves the kernel in pieces of about ``PIECE`` characters, as it is printed.

ipykernel buffers what a cell writes and sends it every 0.2 s as one message: a cell that prints
300 MB within that time becomes one message of 300 MB, held three times over in the kernel (the
text, its JSON, the bytes) and again in the process that relays it (measured: 888 MiB and 865 MiB).
Here, once a stream holds ``PIECE`` characters, the write that got it there waits until they are
sent, so the cell goes only as fast as its output leaves. (One single write of more than that is
still one message.) Applied in the runner's kernel only (``vramlens run NOTEBOOK``); the streams stay the
same objects, so a notebook that looks at ``sys.stdout`` sees what it would have.

IPython 9 also keeps every cell's printed text in ``history_manager.outputs`` for the kernel's life
(a copy nothing reads in the runner's kernel): there its stream records keep no text.
"""

from __future__ import annotations

import sys

PIECE = 1 << 20  # characters buffered before the cell waits for them to be sent
_MARK = "_vramlens_pieces"


def _buffered(stream) -> int:
    """Characters the stream holds unsent (ipykernel 7 buffers per parent message, 6 in one buffer)."""
    buffers = getattr(stream, "_buffers", None)
    if isinstance(buffers, dict):
        return sum(buffer.tell() for buffer in list(buffers.values()))
    buffer = getattr(stream, "_buffer", None)
    return buffer.tell() if buffer is not None else 0


def send_in_pieces(stream) -> bool:
    """Bound what ``stream`` (an ipykernel OutStream) holds unsent; False when it is not one.

    IPython swaps ``write`` for each cell (to copy the text into its history), so the hook is the
    stream's own ``_schedule_flush``, which every write calls once its text is buffered."""
    schedule = getattr(stream, "_schedule_flush", None)
    if schedule is None or getattr(stream, _MARK, False) or not hasattr(stream, "pub_thread"):
        return False

    def schedule_or_send():
        schedule()
        if _buffered(stream) >= PIECE:
            stream.flush()  # waits until the IO thread has sent it: the cell's output never piles up

    stream._schedule_flush = schedule_or_send
    setattr(stream, _MARK, True)
    return True


class _NoText(list):
    """A stream record's text list that keeps nothing (IPython only appends to it)."""

    def append(self, item) -> None:
        pass


class _StreamRecordsWithoutText(list):
    def append(self, item) -> None:
        bundle = getattr(item, "bundle", None)
        if getattr(item, "output_type", None) in ("out_stream", "err_stream") and isinstance(bundle, dict):
            bundle["stream"] = _NoText()
        super().append(item)


def keep_no_printed_text(shell) -> bool:
    """IPython 9's per-cell copy of printed text keeps none; False where that history is not there."""
    history = getattr(shell, "history_manager", None)
    outputs = getattr(history, "outputs", None)
    if not isinstance(outputs, dict) or getattr(outputs, "default_factory", None) is not list:
        return False
    outputs.default_factory = _StreamRecordsWithoutText
    return True


def bound_output(shell) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            send_in_pieces(stream)
        except Exception:  # an unusual stream stays as it is
            pass
    try:
        keep_no_printed_text(shell)
    except Exception:
        pass
