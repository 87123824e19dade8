"""The real-workload corpus's helper modules (workloads/): what each workload is and its ground truth."""

from __future__ import annotations

from ._loading import load
from .paths import WORKLOADS

manifest = load("manifest", WORKLOADS / "manifest.py")
ground_truth = load("ground_truth", WORKLOADS / "ground_truth.py")
unpack = load("unpack", WORKLOADS / "unpack.py")  # the recorded captures' archives into fixture folders
record = load("record", WORKLOADS / "record.py")  # the recorder: which workloads, which runs
