"""Unpickling a snapshot without executing anything in it, within bounded memory, failing in one sentence.

PyTorch's snapshots hold only builtins — dicts, lists, tuples, strings, numbers, booleans and
None — so the unpickler refuses every global: no class is ever looked up, no code ever runs.
The bytes are read first (a regular file, size-limited: capture/loader.py), so a length field
that claims more than the file holds is "truncated", never an allocation of that size; the
memory ceiling stops the remaining ways to grow (a huge memo index). Any other failure of an
opcode (BUILD on a builtin, a bad memo reference, a huge FRAME) is damage, said as such.
"""

from __future__ import annotations

import contextlib
import gc
import io
import pickle

from vramlens.capture.errors import CaptureError
from vramlens.capture.memory_ceiling import ENV_VAR, allowance_for, chosen_allowance, memory_ceiling, raise_hint
from vramlens.regular_files import human_size
from vramlens.safe_text import one_line


class _BuiltinsOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):  # noqa: D401 - pickle's hook
        raise CaptureError(
            f"Refused to load the snapshot: it names the Python object {module}.{name}, "
            "which a PyTorch memory snapshot never contains (it may be malicious)."
        )

    def persistent_load(self, pid):
        raise CaptureError("Refused to load the snapshot: it uses persistent references, which a memory snapshot never has.")


@contextlib.contextmanager
def cyclic_gc_paused():
    """A snapshot is millions of small dicts and lists and no cycles: while they are created the
    cyclic collector would scan them again and again for nothing (half the load time). Until they
    are checked too: the first collection after the load would walk every one of them."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # The objects made meanwhile are the youngest generation, and the allocation count is far
        # past its threshold: the first allocation after re-enabling would walk them all (0.3 s a
        # million entries). Freezing and unfreezing moves them to the oldest generation without a walk.
        gc.freeze()
        gc.unfreeze()
        if was_enabled:
            gc.enable()


class _Source:
    """The bytes as the unpickler reads them: ``read`` and ``readline`` only. Without ``readinto`` it
    never lends a buffer it made for a length the file claims (CPython then reports a buffer freed
    while exported); a read past the end is short, so the length is "truncated"."""

    def __init__(self, data: bytes):
        stream = io.BytesIO(data)
        self.read, self.readline = stream.read, stream.readline


def check_protocol(head: bytes, name: str) -> None:
    if len(head) < 2 or head[0] != 0x80 or head[1] < 2:
        raise CaptureError(f"{name} is not a PyTorch memory snapshot (not a pickle of protocol 2 or newer).")
    if head[1] > pickle.HIGHEST_PROTOCOL:
        raise CaptureError(
            f"{name} was written with pickle protocol {head[1]}, newer than this Python reads "
            f"(up to {pickle.HIGHEST_PROTOCOL}); open it with a newer Python."
        )


def _short(error: BaseException) -> str:
    """The error in a few words on one line: pickle's messages may quote the file's own bytes."""
    text = one_line(str(error))
    text = text if len(text) <= 120 else text[:117] + "..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def unpickle_snapshot(data: bytes, name: str) -> object:
    """The object pickled in ``data`` (the bytes of the file ``name``), or CaptureError."""
    check_protocol(data[:2], name)
    allowance = allowance_for(len(data))
    failure: BaseException | None = None
    with cyclic_gc_paused(), memory_ceiling(allowance):
        try:
            return _BuiltinsOnlyUnpickler(_Source(data)).load()
        except CaptureError:
            raise
        except (Exception, MemoryError, RecursionError) as error:  # noqa: BLE001 - every opcode's failure is damage
            failure = error
    # Out of the ceiling, with what the failed load built already freed.
    if isinstance(failure, MemoryError) and chosen_allowance()[0]:
        raise CaptureError(
            f"{name} needs more than the {human_size(allowance)} of memory allowed for loading it "
            f"(--load-memory or {ENV_VAR}); allow more, or `unlimited`."
        ) from None
    if isinstance(failure, MemoryError):
        raise CaptureError(
            f"{name} would need more than {human_size(allowance)} of memory to load, far more than a PyTorch "
            f"snapshot of its size ({human_size(len(data))}) takes: it is damaged or made to exhaust memory. "
            f"If it is a snapshot you trust, allow more with {raise_hint(allowance)}."
        ) from None
    raise CaptureError(f"{name} is truncated or damaged and cannot be read as a snapshot ({_short(failure)}).") from None
