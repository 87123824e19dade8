"""The allocator's segments as memory_viz draws them: each segment with its live and free blocks in
address order, the failing request's size beside them. The picture of fragmentation: free bytes
that are there, but in pieces no larger than the request could use."""

from __future__ import annotations

from dataclasses import dataclass, field

from vramlens.analysis.load.snapshot import ALLOCATED, FREE, block_state, pool_for_request, segment_pool
from vramlens.units import count_of
from vramlens.units import format_bytes as fmt

MAX_SEGMENTS = 48  # the largest ones; the rest are summed in one sentence
MAX_BLOCKS = 64  # per segment; the blocks past these are one run of their own state


@dataclass
class SegmentRow:
    address: int
    size: int
    pool: str  # "large" | "small"
    blocks: list[tuple[int, int, str]]  # (offset in the segment, size, "live" | "free")
    label: str  # "20.00 MiB · 3 live · 4.00 MiB free, largest 2.00 MiB"
    largest_free: int


@dataclass
class SegmentMap:
    rows: list[SegmentRow]
    request: int | None
    request_pool: str | None
    summary: str  # "12 segments, 1.20 GiB: 1.10 GiB live, 100.00 MiB free in 20 pieces, the largest 8.00 MiB"
    fits_anywhere: bool | None  # whether one free block could hold the request
    left_out: str | None = None
    legend: dict = field(default_factory=lambda: {"live": "live block", "free": "free block (cached)",
                                                  "request": "the failing request, to scale"})


def _blocks(segment: dict) -> list[tuple[int, int, str]]:
    base = segment.get("address", 0)
    blocks = []
    for block in sorted(segment.get("blocks") or (), key=lambda b: b.get("address", 0)):
        state = "live" if block_state(block) == ALLOCATED else "free" if block_state(block) == FREE else "live"
        offset, size = block.get("address", base) - base, block.get("size", 0)
        if blocks and blocks[-1][2] == state and blocks[-1][0] + blocks[-1][1] == offset:
            blocks[-1] = (blocks[-1][0], blocks[-1][1] + size, state)  # neighbours of one state read as one run
        else:
            blocks.append((offset, size, state))
    if len(blocks) > MAX_BLOCKS:
        rest = blocks[MAX_BLOCKS - 1:]
        live = sum(size for _, size, state in rest if state == "live")
        blocks = blocks[:MAX_BLOCKS - 1] + [(rest[0][0], sum(size for _, size, _ in rest), "live" if live * 2 >= sum(s for _, s, _ in rest) else "free")]
    return blocks


def segment_map(segments: list[dict], request: int | None) -> SegmentMap | None:
    """None when the snapshot lists no segment (a raw history without its state)."""
    if not segments:
        return None
    rows = []
    for segment in segments:
        blocks = _blocks(segment)
        live = sum(size for _, size, state in blocks if state == "live")
        free = [size for _, size, state in blocks if state == "free"]
        largest = max(free, default=0)
        label = f"{fmt(segment.get('total_size', 0))} · {fmt(live)} live"
        if free:
            label += f" · {fmt(sum(free))} free in {count_of(len(free), 'piece')}, the largest {fmt(largest)}"
        rows.append(SegmentRow(segment.get("address", 0), segment.get("total_size", 0), segment_pool(segment), blocks,
                               label, largest))
    rows.sort(key=lambda row: (-row.size, row.address))
    total = sum(row.size for row in rows)
    live = sum(size for row in rows for _, size, state in row.blocks if state == "live")
    pieces = [size for row in rows for _, size, state in row.blocks if state == "free"]
    summary = f"{count_of(len(rows), 'segment')}, {fmt(total)}: {fmt(live)} live, {fmt(sum(pieces))} free"
    if pieces:
        summary += f" in {count_of(len(pieces), 'piece')}, the largest {fmt(max(pieces))}"
    pool = pool_for_request(request) if request else None
    fits = None
    if request:
        usable = [row.largest_free for row in rows if row.pool == pool]
        fits = max(usable, default=0) >= request
        summary += f"; the failing {fmt(request)} request {'fits a' if fits else 'fits no'} free block of the {pool} pool"
    shown, rest = rows[:MAX_SEGMENTS], rows[MAX_SEGMENTS:]
    left_out = (f"{count_of(len(rest), 'smaller segment')} ({fmt(sum(row.size for row in rest))}) not drawn"
                if rest else None)
    return SegmentMap(shown, request, pool, summary, fits, left_out)


def segment_map_json(view: SegmentMap) -> dict:
    return {"rows": [{"address": row.address, "size": row.size, "pool": row.pool, "label": row.label,
                      "blocks": [list(block) for block in row.blocks]} for row in view.rows],
            "request": view.request, "requestText": fmt(view.request) if view.request else None,
            "summary": view.summary, "leftOut": view.left_out, "legend": view.legend}
