"""Names and versions of the capture folder, and writing it atomically.

A capture folder holds ``capture.json`` (facts about the run, documented in
docs/capture-format.md) and ``snapshot.pickle`` (exactly what
``torch.cuda.memory._dump_snapshot`` writes, so PyTorch's own viewer opens it).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

FORMAT_NAME = "vramlens-capture"
FORMAT_VERSION = 1
META_FILE = "capture.json"
SNAPSHOT_FILE = "snapshot.pickle"


def write_json_atomically(path: Path, data: dict) -> None:
    """Replace ``path`` with ``data`` so a reader never sees half a file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, sort_keys=True, default=str)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def publish_folder(staging: Path, final: Path) -> None:
    """Move a fully written staging folder into place, replacing an older capture."""
    staging, final = Path(staging), Path(final)
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.replace(final, old)
        os.replace(staging, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, final)
