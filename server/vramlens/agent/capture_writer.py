"""Writing a capture folder so that no reader ever sees half of one.

The folder is filled under a hidden staging name beside its final place, then renamed.
The server side uses ``write_json_atomically`` too, when it adds what it measured.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile

META_FILE = "capture.json"
SNAPSHOT_FILE = "snapshot.pickle"
CENSUS_FILE = "census.json"
PEAK_CENSUS_FILE = "census-peak.json"
FORMAT_NAME = "vramlens-capture"
FORMAT_VERSION = 3  # 2: census.json and census-peak.json; 3: recording.context "alloc", oom.caught_below_python


def write_json_atomically(path: str, data: dict, compact: bool = False) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            if compact:  # a census lists thousands of tensors: one line, no padding
                json.dump(data, out, separators=(",", ":"), default=str)
            else:
                json.dump(data, out, indent=2, sort_keys=True, default=str)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; a capture is shared like any file
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_capture(final_dir: str, meta: dict, snapshot: dict | None, census: dict | None = None,
                  peak_census: dict | None = None) -> None:
    """Write capture.json (+ snapshot.pickle, as torch's _dump_snapshot does, + the censuses) and
    publish the folder."""
    parent = os.path.dirname(os.path.abspath(final_dir))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix="." + os.path.basename(final_dir) + ".staging-", dir=parent)
    os.chmod(staging, 0o777 & ~_umask())
    try:
        meta = dict(meta, format=FORMAT_NAME, version=FORMAT_VERSION)
        if snapshot is not None:
            with open(os.path.join(staging, SNAPSHOT_FILE), "wb") as out:
                pickle.dump(snapshot, out)  # the call torch.cuda.memory._dump_snapshot makes
                out.flush()
                os.fsync(out.fileno())
            meta["snapshot"] = SNAPSHOT_FILE
        else:
            meta["snapshot"] = None
        for key, name, data in (("census", CENSUS_FILE, census), ("peak_census", PEAK_CENSUS_FILE, peak_census)):
            if data is not None:
                write_json_atomically(os.path.join(staging, name), data, compact=True)
            meta[key] = name if data is not None else None
        write_json_atomically(os.path.join(staging, META_FILE), meta)
        _publish(staging, final_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publish(staging: str, final_dir: str) -> None:
    if os.path.exists(final_dir):
        retired = staging + ".retired"
        os.replace(final_dir, retired)
        os.replace(staging, final_dir)
        shutil.rmtree(retired, ignore_errors=True)
    else:
        os.replace(staging, final_dir)
