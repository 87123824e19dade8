"""Heavy loads (openCapture, the capture a diagnose wrote) in a process of their own.

A snapshot may be huge, or made to exhaust memory or time; unpickling it holds the interpreter for
as long as it takes. Run inside the server, that would stop the server answering anything,
``shutdown`` included. So ``load_path`` (lsp/loading.py) runs in a child interpreter, with the same
bounds as the command line (the loader's), while the protocol loop only awaits its answer; cancelling
the request, or shutdown, kills the child at once.

The child reads one request as JSON on stdin and writes one answer on stdout, pickled: the
LoadedCapture, or the sentence of the CaptureError. The server unpickles only what its own child,
running this module, wrote.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import sys

from vramlens.capture import CaptureError

WORKER = (sys.executable, "-m", "vramlens.lsp.load_worker")


async def load_in_worker(path: str, folder_uri: str, folder_path: str, total_memory: int | None = None):
    """``load_path(...)`` in a child process; CaptureError with one sentence when it cannot be loaded."""
    request = json.dumps({"path": path, "folder_uri": folder_uri, "folder_path": folder_path,
                          "total_memory": total_memory}).encode()
    child = await asyncio.create_subprocess_exec(*WORKER, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                 stderr=asyncio.subprocess.PIPE)
    try:
        answer, errors = await child.communicate(request)
    except BaseException:  # cancelled (or the server is going): the load goes with it
        if child.returncode is None:
            child.kill()
            await child.wait()
        raise
    if child.returncode != 0 or not answer:
        last = errors.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise CaptureError(f"Loading {path} stopped unexpectedly (exit code {child.returncode}: {last[0][:200]}).")
    kind, value = pickle.loads(answer)
    if kind == "error":
        raise CaptureError(value)
    return value


def main() -> int:
    answer_to = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # nothing printed on the way can garble the answer
    from vramlens.lsp.loading import load_path

    request = json.loads(sys.stdin.buffer.read())
    try:
        answer = ("ok", load_path(request["path"], request["folder_uri"], request["folder_path"], request["total_memory"]))
    except CaptureError as error:
        answer = ("error", str(error))
    except Exception as error:  # noqa: BLE001 - said in one sentence; the server goes on
        answer = ("error", f"Loading {request['path']} failed unexpectedly ({type(error).__name__}: {error}).")
    answer_to.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    answer_to.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
