"""What loading real snapshots takes: address space and RSS per byte of pickle, and whether the
loader's ceiling (capture/memory_ceiling.py) admits them.

    python benchmarks/compat_load_memory.py SNAPSHOT.pickle|CAPTURE_DIR …
Each file is loaded twice, each time in a fresh process: by plain pickle (what a snapshot needs),
and by VRAM Lens' loader (accepted or refused). Prints size, entries, peak address-space growth
(VmPeak, what RLIMIT_AS bounds), peak RSS growth, and their ratios to the file size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = r"""
import json, os, pickle, sys, time
def vm(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
path, how = sys.argv[1], sys.argv[2]
peak0, rss0 = vm("VmPeak"), vm("VmHWM")
size0 = vm("VmSize")
began = time.perf_counter()
entries = None
if how == "pickle":
    import gc
    gc.disable()
    with open(path, "rb") as f:
        data = pickle.load(f)
    entries = sum(len(t) for t in data.get("device_traces", []))
    outcome = "loaded"
else:
    from vramlens.capture.loader import load_checked_snapshot
    from vramlens.capture import CaptureError
    try:
        load_checked_snapshot(path)
        outcome = "accepted"
    except CaptureError as error:
        outcome = "refused: " + str(error)[:200]
print(json.dumps({"address_growth": vm("VmPeak") - size0, "rss_growth": vm("VmHWM") - rss0,
                  "seconds": time.perf_counter() - began, "entries": entries, "outcome": outcome}))
"""


def snapshot_path(path: str) -> str:
    return os.path.join(path, "snapshot.pickle") if os.path.isdir(path) else path


def probe(path: str, how: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, path, how], capture_output=True, text=True, timeout=600)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"outcome": "failed: " + done.stderr.strip()[-300:]}


def main() -> int:
    mib = 2**20
    print("| snapshot | size | entries | address space (plain load) | × size | RSS (plain load) | × size | load s | VRAM Lens loader |")
    print("|---|---|---|---|---|---|---|---|---|")
    for given in sys.argv[1:]:
        path = snapshot_path(given)
        size = os.path.getsize(path)
        plain, ours = probe(path, "pickle"), probe(path, "vramlens")
        grow, rss = plain.get("address_growth") or 0, plain.get("rss_growth") or 0
        print(f"| {os.path.basename(os.path.dirname(path)) or path} | {size / mib:.1f} MiB | {plain.get('entries')} | "
              f"{grow / mib:.0f} MiB | {grow / size:.1f} | {rss / mib:.0f} MiB | {rss / size:.1f} | "
              f"{plain.get('seconds', 0):.1f} | {ours.get('outcome')} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
