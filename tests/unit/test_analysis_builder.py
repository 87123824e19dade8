"""Hand-built snapshots for the analysis unit tests (real captures are tested in tests/test_captures.py).

The builder plays the allocator's part: it records trace entries the way torch does and, at the
end, writes the final ``segments`` with their blocks, so replay and reconstruction can be checked.
"""

from __future__ import annotations

ROOT = "/srv/app"
SITE = "/usr/lib/python3/dist-packages"
MIB = 1024 * 1024

_FRAME_CACHE: dict = {}


def frame(filename: str, line: int, name: str) -> dict:
    key = (filename, line, name)
    if key not in _FRAME_CACHE:  # torch shares frame dicts between entries
        _FRAME_CACHE[key] = {"filename": filename, "line": line, "name": name}
    return _FRAME_CACHE[key]


def user_stack(line: int, file: str = "train.py", function: str = "step", through_torch: bool = True) -> list:
    inner = [frame(f"{SITE}/torch/nn/modules/linear.py", 125, "forward"),
             frame(f"{SITE}/torch/nn/modules/module.py", 1762, "_call_impl")] if through_torch else []
    return [*inner, frame(f"{ROOT}/{file}", line, function), frame(f"{ROOT}/{file}", 99, "<module>")]


class SnapshotBuilder:
    def __init__(self, time_us: bool = True):
        self.trace: list[dict] = []
        self.segments: dict[int, dict] = {}  # address -> {"size", "pool"}
        self.blocks: dict[int, tuple[int, list]] = {}  # live blocks: address -> (size, frames)
        self.time_us = time_us
        self._clock = 1_700_000_000_000_000

    def _add(self, action: str, addr: int, size: int, frames=None, **extra) -> None:
        entry = {"action": action, "addr": addr, "size": size, "stream": 0, "frames": frames or [], **extra}
        if self.time_us:
            self._clock += 10
            entry["time_us"] = self._clock
        self.trace.append(entry)

    def segment(self, addr: int, size: int, pool: str = "large") -> "SnapshotBuilder":
        self.segments[addr] = {"size": size, "pool": pool}
        self._add("segment_alloc", addr, size)
        return self

    def release_segment(self, addr: int) -> "SnapshotBuilder":
        self._add("segment_free", addr, self.segments.pop(addr)["size"])
        return self

    def alloc(self, addr: int, size: int, frames=None) -> "SnapshotBuilder":
        self.blocks[addr] = (size, frames or [])
        self._add("alloc", addr, size, frames)
        return self

    def free(self, addr: int) -> "SnapshotBuilder":
        size, frames = self.blocks.pop(addr)
        self._add("free_requested", addr, size, frames)
        self._add("free_completed", addr, size, frames)
        return self

    def oom(self, request: int, device_free: int) -> "SnapshotBuilder":
        self._add("oom", device_free, request, device_free=device_free)
        return self

    def final_segments(self) -> list[dict]:
        segments = []
        for address, info in sorted(self.segments.items()):
            end = address + info["size"]
            blocks, cursor = [], address
            for addr in sorted(a for a in self.blocks if address <= a < end):
                size, frames = self.blocks[addr]
                if addr > cursor:
                    blocks.append({"address": cursor, "size": addr - cursor, "requested_size": 0, "state": "inactive", "frames": []})
                blocks.append({"address": addr, "size": size, "requested_size": size, "state": "active_allocated", "frames": frames})
                cursor = addr + size
            if cursor < end:
                blocks.append({"address": cursor, "size": end - cursor, "requested_size": 0, "state": "inactive", "frames": []})
            segments.append({
                "device": 0, "address": address, "total_size": info["size"], "stream": 0, "segment_type": info["pool"],
                "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
                "active_size": 0, "requested_size": 0, "is_expandable": False, "frames": [], "blocks": blocks,
            })
        return segments

    def snapshot(self, keep_last: int | None = None, settings: dict | None = None) -> dict:
        """The snapshot as torch dumps it; ``keep_last`` imitates a ring buffer that lost older entries."""
        trace = self.trace if keep_last is None else self.trace[-keep_last:]
        snapshot = {"segments": self.final_segments(), "device_traces": [trace], "external_annotations": []}
        if settings is not None:
            snapshot["allocator_settings"] = settings
        return snapshot


def test_builder_final_segments_cover_every_byte():
    builder = SnapshotBuilder().segment(0, 64 * MIB).alloc(0, 8 * MIB).alloc(16 * MIB, 8 * MIB)
    [segment] = builder.final_segments()
    assert sum(block["size"] for block in segment["blocks"]) == 64 * MIB
    assert [block["state"] for block in segment["blocks"]] == ["active_allocated", "inactive", "active_allocated", "inactive"]
