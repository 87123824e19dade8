"""The load stage: one device's trace and segments out of a capture, the allocator settings, how
the run ended and which frames are the user's code; what every later stage reads and nothing it
computed."""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.analysis.load.ending import nothing_recorded, rejection_note, run_status
from vramlens.analysis.load.interventions import Intervention, read_interventions
from vramlens.analysis.load.notebook import read_notebook_facts
from vramlens.analysis.load.snapshot import (
    allocator_settings, block_frames, device_segments, device_trace, expandable_segments_on, pick_device,
    settle_skipped_actions,
)
from vramlens.analysis.load.sources import SourceResolver, usable_recorded_root
from vramlens.analysis.model import PhaseMark
from vramlens.capture import Capture, CaptureError


@dataclass(frozen=True)
class Loaded:
    """The load stage's result: the checked capture, its device's trace and segments, and how to read its sources."""

    capture: Capture  # its meta and its censuses
    device: int
    trace: list  # the device's allocator trace, oldest first
    segments: list[dict]  # the device's segments when the snapshot was taken
    settings: dict  # allocator settings (PYTORCH_CUDA_ALLOC_CONF as the run had them)
    expandable_on: bool
    resolver: SourceResolver  # recorded paths -> local files, user code or library; a notebook's cells
    status: str  # capture.json status; "snapshot" for a raw pickle
    total_memory: int | None  # the device total the caller gave (--total-memory), if any
    tried: list[Intervention]  # allocator experiments already measured on this script
    phase_marks: list[PhaseMark]  # the user's annotations, in trace order
    notes: tuple[str, ...]

    @property
    def meta(self) -> dict:
        return self.capture.meta

    @property
    def frame_names(self) -> dict | None:
        names = self.meta.get("frame_names")
        return names if isinstance(names, dict) else None


def read(capture: Capture, total_memory: int | None, source_root: str | None) -> Loaded:
    meta, snapshot = capture.meta, capture.snapshot
    device = pick_device(snapshot, meta)
    trace = device_trace(snapshot, device)
    _check_usable(capture, trace)
    segments = device_segments(snapshot, device)
    settings = allocator_settings(snapshot, meta)
    notes: list[str] = list(capture.notes)
    checked_trace = capture.traces.get(device)  # what the loader saw in this device's trace
    if checked_trace is not None:
        notes += settle_skipped_actions(trace, checked_trace.actions, checked_trace.reused_addresses)
    rejected = rejection_note(meta)
    if rejected:
        notes.append(rejected)
    marks = [PhaseMark(mark.index, mark.time_us, mark.text) for mark in (checked_trace.annotations if checked_trace else [])]
    return Loaded(
        capture=capture, device=device, trace=trace, segments=segments, settings=settings,
        expandable_on=expandable_segments_on(settings, segments), resolver=_resolver(meta, source_root, trace, segments),
        status=run_status(meta), total_memory=total_memory, tried=read_interventions(meta), phase_marks=marks,
        notes=tuple(notes),
    )


def _check_usable(capture: Capture, trace: list) -> None:
    meta = capture.meta
    if meta.get("status") == "no_cuda":
        raise CaptureError("This capture has no CUDA allocator history: the script never used CUDA in that interpreter.")
    if not trace:
        raise nothing_recorded(meta)


def _resolver(meta: dict, source_root: str | None, trace: list, segments: list[dict]) -> SourceResolver:
    recorded_root = meta.get("source_root")
    local_root = source_root or (recorded_root if usable_recorded_root(recorded_root) else None)
    resolver = SourceResolver(recorded_root, local_root)
    resolver.cells = read_notebook_facts(meta, resolver.local_path)
    resolver.use_mapping_if_it_matches(_sample_filenames(trace, segments))
    return resolver


def _sample_filenames(trace: list, segments: list[dict], entries: int = 2000) -> set[str]:
    """File names from the first allocations and the final blocks: enough to tell whether the
    local source root holds this program's files."""
    stacks = [entry.get("frames") or () for entry in trace[:entries]]
    stacks += [block_frames(block) for segment in segments for block in (segment.get("blocks") or ())[:entries]]
    # Entries of one stack share its frames list, and stacks share their frame dicts: each is read once.
    distinct_stacks = {id(stack): stack for stack in stacks}.values()
    frames = {id(frame): frame for stack in distinct_stacks for frame in stack}.values()
    return {frame.get("filename", "??") for frame in frames}
