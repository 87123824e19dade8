"""The snapshot's shape, checked once where it enters: everything past here trusts the types.

Checked is what the analysis reads — the segments and their blocks, the device traces, the
frames, the allocator settings — with integers in sane ranges; keys this version does not read
are left alone and never looked at (newer torch releases add some: docs/capture-format.md).

A pickle can share one object many times at no cost (torch itself shares a frame dict between
every stack it appears in). So every shared object is checked once, and what later stages will
walk per reference is bounded: a stack keeps its innermost ``MAX_STACK`` frames, and the frame
references of all entries together stay within a budget that grows with the file's size, far
above what real snapshots use (about 0.3 per byte). A snapshot beyond that is refused in one
sentence instead of taking minutes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from operator import is_, or_

from vramlens.capture.errors import CaptureError
from vramlens.capture.stacks import SharedStacks

MAX_DEVICES = 1024
SIZE_LIMIT = 1 << 56  # 64 PiB: more than any device; a larger "size" is damage
ADDRESS_LIMIT = 1 << 64
TIME_LIMIT = 1 << 63
MAX_STACK = 2048  # frames kept per stack, innermost first (torch lists the innermost frame first)
FRAME_REFS_PER_BYTE = 1
FRAME_REFS_FLOOR = 1_000_000
# A trace entry, a segment or a block costs a real pickle 40 bytes or more; one object referenced
# again costs two. Records beyond one per 8 bytes of the file are a shared object repeated.
RECORDS_PER_BYTE = 1 / 8
RECORDS_FLOOR = 100_000
MAX_ANNOTATIONS = 10_000
MAX_ANNOTATION_TEXT = 500

# Trace actions whose ``addr`` and ``size`` the replay reads.
MEMORY_ACTIONS = frozenset({
    "alloc", "free_requested", "free_completed", "free", "segment_alloc", "segment_free", "segment_map", "segment_unmap",
})
FREE_ACTIONS = ("free_requested", "free_completed", "free")
ANNOTATE = "annotate"  # torch 2.14: a user's mark in the history; its text is in user_metadata
_NONE = type(None)
_INT_OR_NONE = frozenset({int, _NONE})
_STACK_OR_NONE = frozenset({list, tuple, type(None)})

# allocator_settings is a small flat record (torch 2.3+), one level of dicts at most
# (roundup_power2_divisions); anything deeper or larger is not a setting.
SETTINGS_DEPTH = 3
SETTINGS_ITEMS = 2_000
TEXT_LIMIT = 10_000


@dataclass
class Annotation:
    """A phase mark the user put into the history (torch 2.14's ``annotate`` action)."""

    index: int  # position in its device's trace
    time_us: int | None
    text: str


@dataclass
class TraceFacts:
    """What the check saw in one device's trace, for the stages that normalise layouts."""

    actions: dict[str, int] = field(default_factory=dict)  # action -> entries
    reused_addresses: int = 0  # allocations at an address the trace had not freed (its frees were skipped)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class CheckedSnapshot:
    """The snapshot as the analysis may read it, with what the check found on the way."""

    snapshot: dict  # segments, device_traces (a list per device), allocator_settings
    notes: list[str] = field(default_factory=list)
    traces: dict[int, TraceFacts] = field(default_factory=dict)  # device -> facts of its trace


def _type_name(value) -> str:
    return type(value).__name__


class _Checker:
    def __init__(self, name: str, file_size: int):
        self.name = name
        self.file_size = file_size
        self.frame_refs = 0
        self.frame_budget = FRAME_REFS_PER_BYTE * file_size + FRAME_REFS_FLOOR
        self.records = 0
        self.record_budget = int(RECORDS_PER_BYTE * file_size) + RECORDS_FLOOR
        self.stacks: dict[int, list] = {}  # id of a checked stack -> the list to use (itself, or cut)
        self.replacements: dict[int, list] = {}  # id of a stack replaced by a checked copy -> the copy
        self.keep_alive: list = []  # the stacks replaced: their ids stay theirs while they live
        self.frames: set[int] = set()  # ids of checked frame dicts
        self.cut_stacks = 0

    def damaged(self, where: str, what: str) -> CaptureError:
        return CaptureError(f"{self.name} is damaged: {where} {what}.")

    # -- stacks ----------------------------------------------------------------------------------
    def stack(self, frames, where: str) -> list:
        """``frames`` checked (each frame a dict with a str filename, an int line, a str name)."""
        known = self.stacks.get(id(frames))
        if known is None:
            known = self._new_stack(frames, where)
        self.frame_refs += len(known)
        if self.frame_refs > self.frame_budget:
            raise self.too_many_frame_refs()
        return known

    def count_records(self, count: int, what: str) -> None:
        self.records += count
        if self.records > self.record_budget:
            raise CaptureError(
                f"{self.name} is not a snapshot this version can analyse in bounded time: it lists {self.records:,} "
                f"{what} and other records in a file of {self.file_size:,} bytes (a recorded snapshot takes 40 bytes "
                "or more for each; records repeated this way are made, not recorded).")

    def too_many_frame_refs(self) -> CaptureError:
        return CaptureError(
            f"{self.name} is not a snapshot this version can analyse in bounded time: its stacks hold "
            f"{self.frame_refs:,} frame references, more than {self.frame_budget:,} for a file of this size "
            "(real snapshots hold far fewer; stacks repeated this way are made, not recorded).")

    def _new_stack(self, frames, where: str) -> list:
        if type(frames) not in (list, tuple):
            raise self.damaged(where, f"has frames that are a {_type_name(frames)}, not a list")
        checked = self._usable_stack(frames)
        self._check_frames([checked], where)
        self.stacks[id(frames)] = checked
        if checked is not frames:
            self.replacements[id(frames)] = checked
            self.keep_alive.append(frames)
        return checked

    # -- the trace -------------------------------------------------------------------------------
    # A trace has up to millions of entries: its fields are checked column by column with the
    # interpreter's own loops (map, set, min, max); only when a column fails is the trace walked
    # entry by entry, to name the first bad one.
    def trace(self, trace, device: int, result: CheckedSnapshot) -> list:
        where = f"the trace of device {device}"
        if trace is None:
            return []
        if type(trace) is tuple:
            trace = list(trace)
        elif type(trace) is not list:
            raise self.damaged(where, f"is a {_type_name(trace)}, not a list")
        if not trace:
            result.traces[device] = TraceFacts()
            return trace
        self.count_records(len(trace), "trace entries")
        try:
            actions = list(map(dict.get, trace, repeat("action")))
        except TypeError:  # an entry that is not a record
            self._explain(trace, where)
        if set(map(type, actions)) != {str}:
            self._explain(trace, where)
        counts = dict(Counter(actions))
        addrs = list(map(dict.get, trace, repeat("addr")))
        sizes = list(map(dict.get, trace, repeat("size")))
        addr_types, size_types = set(map(type, addrs)), set(map(type, sizes))
        # Addresses and streams are keys, never computed with: their type is enough.
        if not (addr_types <= _INT_OR_NONE and _ints_within(sizes, SIZE_LIMIT, size_types)
                and _ints_within(list(map(dict.get, trace, repeat("time_us"))), TIME_LIMIT)
                and set(map(type, map(dict.get, trace, repeat("stream")))) <= _INT_OR_NONE):
            self._explain(trace, where)
        if _NONE in addr_types or _NONE in size_types:
            missing = map(or_, map(is_, addrs, repeat(None)), map(is_, sizes, repeat(None)))
            incomplete = set(compress(actions, missing))  # the actions of entries without an address or a size
            if incomplete & MEMORY_ACTIONS:
                self._explain(trace, where)
        for index in _positions(actions, "oom", counts.get("oom", 0)):
            self._oom_entry(trace[index], where)
        facts = TraceFacts(counts)
        if counts.get("alloc") and not any(counts.get(action) for action in FREE_ACTIONS):
            allocated_at = [addr for action, addr in zip(actions, addrs) if action == "alloc"]
            facts.reused_addresses = len(allocated_at) - len(set(allocated_at))
        del addrs, sizes
        if counts.get(ANNOTATE):
            facts.annotations = _annotations(trace, actions, counts[ANNOTATE])
        del actions
        self._trace_stacks(trace, where)
        result.traces[device] = facts
        return trace

    def _trace_stacks(self, trace: list, where: str) -> None:
        frames = list(map(dict.get, trace, repeat("frames")))
        kinds = set(map(type, frames))
        if not kinds <= _STACK_OR_NONE:
            self._explain(trace, where)
        present = list(filter(None, frames))
        lengths = list(map(len, present))
        if tuple in kinds or max(lengths, default=0) > MAX_STACK:
            present = self._usable_stacks(trace, present)  # the rare case: copies, once per shared stack
            lengths = list(map(len, present))
            frames = list(map(dict.get, trace, repeat("frames")))
        del present
        self.frame_refs += sum(lengths)
        if self.frame_refs > self.frame_budget:
            raise self.too_many_frame_refs()
        self._check_frames(_share_stacks(trace, frames), where)

    def _usable_stacks(self, trace: list, present: list) -> list:
        """Tuples made lists and deep stacks cut, each shared stack once; the entries point at the copies."""
        for entry in trace:
            stack = entry.get("frames")
            if stack and (type(stack) is tuple or len(stack) > MAX_STACK):
                copy = self.replacements.get(id(stack))
                if copy is None:
                    copy = self.replacements[id(stack)] = self._usable_stack(stack)
                    self.keep_alive.append(stack)
                entry["frames"] = copy
        return list(filter(None, map(dict.get, trace, repeat("frames"))))

    def _usable_stack(self, stack) -> list:
        """The stack as the replay reads it: a list, at most MAX_STACK frames (innermost first)."""
        if len(stack) > MAX_STACK:
            self.cut_stacks += 1
            return list(stack[:MAX_STACK])
        return list(stack) if type(stack) is tuple else stack

    def _check_frames(self, stacks: list, where: str) -> None:
        """Every frame of ``stacks`` not seen before: a dict with a str filename, an int line and a str name.
        One pass in C finds which frames are new (torch shares a few hundred frame dicts among
        millions of references); a second, in Python, checks those and stops once it has them all."""
        new = set(map(id, chain.from_iterable(stacks))) - self.frames
        if not new:
            return
        for frame in chain.from_iterable(stacks):
            key = id(frame)
            if key not in new:
                continue
            if type(frame) is not dict:
                raise self.damaged(where, f"has a frame that is a {_type_name(frame)}, not a record")
            if type(frame.get("filename")) is not str or type(frame.get("line")) is not int or type(frame.get("name")) is not str:
                raise self.damaged(where, "has a frame without a text filename, a whole line number and a text name")
            self.frames.add(key)
            new.discard(key)
            if not new:
                return

    def _oom_entry(self, entry: dict, where: str) -> None:
        for key in ("device_free", "addr"):
            value = entry.get(key)
            if value is not None and (type(value) is not int or not 0 <= value < ADDRESS_LIMIT):
                raise self.damaged(f"an oom entry of {where}", f"has a {key} that is not a whole number of bytes")

    def _explain(self, trace: list, where: str):
        """Walk the trace entry by entry and raise for the first one that is not of the documented shape."""
        for index, entry in enumerate(trace):
            here = f"entry {index} of {where}"
            if type(entry) is not dict:
                raise self.damaged(here, f"is a {_type_name(entry)}, not a record")
            action = entry.get("action")
            if type(action) is not str:
                raise self.damaged(here, "has no action")
            for key, word, limit in (("addr", "address", None), ("size", "size", SIZE_LIMIT)):
                value = entry.get(key)
                if value is None and action in MEMORY_ACTIONS:
                    raise self.damaged(f"{here} ({action})", f"has no {word}")
                if value is not None and (type(value) is not int or limit and not 0 <= value < limit):
                    raise self.damaged(f"{here} ({action})", f"has a {word} that is not a sane whole number")
            time_us = entry.get("time_us")
            if time_us is not None and (type(time_us) is not int or not 0 <= time_us < TIME_LIMIT):
                raise self.damaged(here, "has a time that is not whole microseconds")
            if entry.get("stream") is not None and type(entry.get("stream")) is not int:
                raise self.damaged(here, "has a stream that is not a number")
            stack = entry.get("frames")
            if stack is not None and type(stack) not in (list, tuple):
                raise self.damaged(here, f"has frames that are a {_type_name(stack)}, not a list")
        raise self.damaged(where, "is not of the documented shape")

    # -- segments --------------------------------------------------------------------------------
    def segments(self, segments) -> list:
        if segments is None:
            return []
        if type(segments) is tuple:
            segments = list(segments)
        if type(segments) is not list:
            raise self.damaged("its segments", f"are a {_type_name(segments)}, not a list")
        self.count_records(len(segments), "segments")
        for number, segment in enumerate(segments):
            where = f"segment {number}"
            if type(segment) is not dict:
                raise self.damaged(where, f"is a {_type_name(segment)}, not a record")
            # A number the analysis reads may be missing (its default applies), never present as anything else.
            device = segment.get("device")
            if "device" in segment and (type(device) is not int or not 0 <= device < MAX_DEVICES):
                raise self.damaged(where, "names no valid device")
            for key in ("address", "total_size", "allocated_size", "active_size", "requested_size"):
                value = segment.get(key)
                limit = ADDRESS_LIMIT if key == "address" else SIZE_LIMIT
                if key in segment and (type(value) is not int or not 0 <= value < limit):
                    raise self.damaged(where, f"has a {key} that is not a sane whole number of bytes")
            kind = segment.get("segment_type")
            if kind is not None and type(kind) is not str:
                raise self.damaged(where, "has a segment_type that is not text")
            stream = segment.get("stream")
            if stream is not None and type(stream) is not int:
                raise self.damaged(where, "has a stream that is not a number")
            frames = segment.get("frames")
            if frames:
                segment["frames"] = self.stack(frames, where)
            blocks = segment.get("blocks")
            if blocks is None:
                continue
            if type(blocks) is tuple:
                blocks = segment["blocks"] = list(blocks)
            if type(blocks) is not list:
                raise self.damaged(where, f"has blocks that are a {_type_name(blocks)}, not a list")
            self.count_records(len(blocks), "blocks")
            for position, block in enumerate(blocks):
                self.block(block, f"block {position} of {where}")
        return segments

    def block(self, block, where: str) -> None:
        if type(block) is not dict:
            raise self.damaged(where, f"is a {_type_name(block)}, not a record")
        for key, limit in (("address", ADDRESS_LIMIT), ("size", SIZE_LIMIT), ("requested_size", SIZE_LIMIT)):
            value = block.get(key)
            if key in block and (type(value) is not int or not 0 <= value < limit):
                raise self.damaged(where, f"has a {key} that is not a sane whole number")
        state = block.get("state")
        if state is not None and type(state) is not str:
            raise self.damaged(where, "has a state that is not text")
        frames = block.get("frames")
        if frames:
            block["frames"] = self.stack(frames, where)
        history = block.get("history")  # torch 1.13 / 2.0: the last entry is the allocation
        if history:
            if type(history) not in (list, tuple) or type(history[-1]) is not dict:
                raise self.damaged(where, "has a history that is not a list of records")
            last = history[-1]
            real_size = last.get("real_size")
            if real_size is not None and (type(real_size) is not int or not 0 <= real_size < SIZE_LIMIT):
                raise self.damaged(where, "has a history size that is not a sane whole number")
            if last.get("frames"):
                last["frames"] = self.stack(last["frames"], where)


def _share_stacks(trace: list, stacks: list) -> list:
    """Each entry given the one frames list of its stack (capture/stacks.py; ``stacks``: the entries'
    frames, in order); returns the distinct lists."""
    shared_stacks = SharedStacks()
    shared_stacks.share_entries(trace, stacks)
    return shared_stacks.distinct


def _ints_within(values: list, limit: int, types: set | None = None) -> bool:
    """Every value present is an int in [0, limit). ``types``: the values' types, when known already."""
    types = set(map(type, values)) if types is None else types
    if not types <= _INT_OR_NONE:
        return False
    if _NONE in types:
        values = [value for value in values if value is not None]
    return not values or (min(values) >= 0 and max(values) < limit)


def _positions(items: list, wanted, count: int) -> list[int]:
    """The indexes of the ``count`` items equal to ``wanted`` (list.index runs in C)."""
    found, start = [], 0
    for _ in range(count):
        start = items.index(wanted, start)
        found.append(start)
        start += 1
    return found


def _annotations(trace: list, actions: list, count: int) -> list[Annotation]:
    marks = []
    for index in _positions(actions, ANNOTATE, min(count, MAX_ANNOTATIONS)):
        entry = trace[index]
        text = _annotation_text(entry.get("user_metadata"))
        if text:
            when = entry.get("time_us")
            marks.append(Annotation(index, when if type(when) is int else None, text))
    return marks


def _annotation_text(value) -> str | None:
    """The text of an annotate entry: torch 2.14 keeps it in ``user_metadata`` (a string, or a small record)."""
    if type(value) is str:
        text = value
    elif type(value) is dict:
        parts = [f"{key}={item}" for key, item in list(value.items())[:8]
                 if type(key) is str and type(item) in (str, int, float, bool)]
        text = ", ".join(parts)
    else:
        return None
    text = text.strip()
    return text[:MAX_ANNOTATION_TEXT] if text else None


def plain_settings(value, depth: int = 0, budget: list | None = None):
    """A copy of a settings record made of text keys and plain values only, within depth and size
    limits; None for anything else. A copy, so no shared or self-referencing object gets past it."""
    budget = budget if budget is not None else [SETTINGS_ITEMS]
    budget[0] -= 1
    if budget[0] < 0:
        raise TooLarge
    kind = type(value)
    if value is None or kind in (bool, float):
        return value if kind is not float or value == value and abs(value) != float("inf") else None
    if kind is int:
        return value if -ADDRESS_LIMIT < value < ADDRESS_LIMIT else None  # SIZE_MAX stands for "unset"
    if kind is str:
        return value[:TEXT_LIMIT]
    if depth >= SETTINGS_DEPTH:
        raise TooLarge
    if kind is dict:
        return {str(key)[:TEXT_LIMIT]: plain_settings(item, depth + 1, budget)
                for key, item in value.items() if type(key) in (str, int)}
    if kind in (list, tuple):
        return [plain_settings(item, depth + 1, budget) for item in value]
    return None


class TooLarge(Exception):
    """A settings record deeper or larger than any allocator's."""


def _settings(value, notes: list[str]) -> dict | None:
    if value is None:
        return None
    if type(value) is not dict:
        notes.append("The snapshot's allocator_settings are not a record; they were ignored.")
        return None
    try:
        return plain_settings(value)
    except TooLarge:
        notes.append("The snapshot's allocator_settings are nested deeper or hold more than any allocator's "
                     "settings; they were ignored.")
        return None


def _device_traces(traces, checker: _Checker, result: CheckedSnapshot) -> list:
    if traces is None:
        return []
    if type(traces) is dict:  # a mapping keyed by device: made a list, devices in place
        devices = [key for key in traces if type(key) is int and 0 <= key < MAX_DEVICES]
        if len(devices) != len(traces):
            raise checker.damaged("its device_traces", "are keyed by something other than device numbers")
        as_list = [None] * (max(devices) + 1 if devices else 0)
        for device in devices:
            as_list[device] = traces[device]
        traces = as_list
    elif type(traces) is tuple:
        traces = list(traces)
    if type(traces) is not list:
        raise checker.damaged("its device_traces", f"are a {_type_name(traces)}, not a list")
    if len(traces) > MAX_DEVICES:
        raise checker.damaged("its device_traces", f"list {len(traces)} devices, more than any machine has")
    return [checker.trace(trace, device, result) for device, trace in enumerate(traces)]


def check_snapshot(raw, name: str, file_size: int) -> CheckedSnapshot:
    """The snapshot ``name`` (``file_size`` bytes) as typed records, or CaptureError in one sentence."""
    if type(raw) is not dict or not ("segments" in raw or "device_traces" in raw):
        raise CaptureError(f"{name} is a pickle but not a PyTorch memory snapshot (no segments or device_traces).")
    checker = _Checker(name, file_size)
    result = CheckedSnapshot(snapshot={})
    result.snapshot["segments"] = checker.segments(raw.get("segments"))
    result.snapshot["device_traces"] = _device_traces(raw.get("device_traces"), checker, result)
    settings = _settings(raw.get("allocator_settings"), result.notes)
    if settings is not None:
        result.snapshot["allocator_settings"] = settings
    if checker.cut_stacks:
        result.notes.append(f"{checker.cut_stacks} stack{'s' if checker.cut_stacks != 1 else ''} deeper than "
                            f"{MAX_STACK} frames {'were' if checker.cut_stacks != 1 else 'was'} cut to the innermost {MAX_STACK}.")
    return result
