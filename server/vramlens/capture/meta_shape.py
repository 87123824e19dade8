"""capture.json's shape (docs/capture-format.md), checked once where it enters.

``CAPTURE`` below is the one statement of what each field holds. A field of the wrong type, or a
number outside its sane range, reads as unknown (None) with a note naming it, never as a wrong
fact; keys not listed are not read (a newer VRAM Lens may add some). Lists and texts are bounded
by the file's own size limit (capture/loader.py). A new field read anywhere is declared here first.
"""

from __future__ import annotations

import math

from vramlens.capture.snapshot_shape import TooLarge, plain_settings

BYTES_LIMIT = 1 << 56
EPOCH_LIMIT = 1e11  # seconds: year 5138
MAX_NOTES = 20  # notes about wrong fields; more are counted, not listed
MAX_ROWS = 100  # interventions, experiment rows, notes: more than any run makes; the rest is not read


class Field:
    name = "a value"

    def check(self, value, path: str, notes: list):
        return value if self.valid(value) else _wrong(notes, path, self.name)

    def valid(self, value) -> bool:
        raise NotImplementedError


class Text(Field):
    """A text, cut at ``limit`` characters (with "…"): no name or sentence of a capture needs more,
    and nothing longer reaches the report or the editor."""

    name = "text"

    def __init__(self, limit: int = 20_000):
        self.limit = limit

    def check(self, value, path: str, notes: list):
        if type(value) is not str:
            return _wrong(notes, path, self.name)
        return value if len(value) <= self.limit else value[:self.limit] + "…"

    def valid(self, value) -> bool:
        return type(value) is str


class Flag(Field):
    name = "true or false"

    def valid(self, value) -> bool:
        return type(value) is bool


class Whole(Field):
    def __init__(self, low: int, high: int, name: str = "a whole number"):
        self.low, self.high, self.name = low, high, name

    def valid(self, value) -> bool:
        return type(value) is int and self.low <= value <= self.high


class Number(Field):
    def __init__(self, low: float, high: float, name: str = "a number"):
        self.low, self.high, self.name = low, high, name

    def valid(self, value) -> bool:
        # Compared, never converted: an int of a thousand digits is no float.
        return (type(value) is int or (type(value) is float and math.isfinite(value))) and self.low <= value <= self.high


class Either(Field):
    def __init__(self, *choices: Field):
        self.choices = choices
        self.name = " or ".join(choice.name for choice in choices)

    def valid(self, value) -> bool:
        return any(choice.valid(value) for choice in self.choices)


class ListOf(Field):
    """A list; an item of the wrong kind is left out, or (``whole``) makes the whole list unknown.
    Items past ``limit`` are not read (and said so)."""

    def __init__(self, item: Field, whole: bool = False, limit: int = 1_000_000):
        self.item, self.whole, self.limit = item, whole, limit
        self.name = f"a list of {item.name}"

    def check(self, value, path: str, notes: list):
        if type(value) is not list:
            return _wrong(notes, path, self.name)
        if len(value) > self.limit:
            notes.append((path, f"at most {self.limit} entries: {len(value) - self.limit} more were not read"))
            value = value[:self.limit]
        checked = [self.item.check(item, f"{path}[{index}]", notes) for index, item in enumerate(value)]
        if self.whole and any(item is None for item in checked):
            return None
        return [item for item in checked if item is not None]


class MapOf(Field):
    """Text keys to values of one kind (environment variables)."""

    def __init__(self, value: Field):
        self.value = value
        self.name = f"a record of {value.name}"

    def check(self, value, path: str, notes: list):
        if type(value) is not dict:
            return _wrong(notes, path, self.name)
        return {key: item for key, item in ((key, self.value.check(item, f"{path}.{key}", notes)) for key, item in value.items())
                if item is not None}


class Row(Field):
    """A list of a fixed length whose items have the given kinds, e.g. [first line, last line, name]."""

    def __init__(self, *items: Field):
        self.items = items
        self.name = "[" + ", ".join(item.name for item in items) + "]"

    def valid(self, value) -> bool:
        return type(value) is list and len(value) == len(self.items) and all(
            item.valid(part) for item, part in zip(self.items, value))


class Section(Field):
    """A record whose shape is checked by its own module (named here), passed on as it is."""

    name = "a record"

    def __init__(self, checked_by: str):
        self.checked_by = checked_by

    def valid(self, value) -> bool:
        return type(value) is dict


class Plain(Field):
    """A small record of plain values, copied within bounds (the allocator settings)."""

    name = "a small record of plain values"

    def check(self, value, path: str, notes: list):
        if type(value) is not dict:
            return _wrong(notes, path, self.name)
        try:
            return plain_settings(value)
        except TooLarge:
            return _wrong(notes, path, self.name)


class Record(Field):
    name = "a record"

    def __init__(self, fields: dict[str, Field]):
        self.fields = fields

    def check(self, value, path: str, notes: list):
        if type(value) is not dict:
            return _wrong(notes, path, self.name)
        checked = {}
        for key, kind in self.fields.items():
            if key in value and value[key] is not None:
                checked[key] = kind.check(value[key], f"{path}.{key}" if path else key, notes)
            elif key in value:
                checked[key] = None
        return checked


def _wrong(notes: list, path: str, expected: str):
    notes.append((path, expected))
    return None


TEXT, FLAG = Text(), Flag()
BYTES = Whole(0, BYTES_LIMIT, "a whole number of bytes")
COUNT = Whole(0, 1 << 53, "a count")
EXIT_CODE = Whole(-(1 << 31), (1 << 31) - 1, "an exit code")
PID = Whole(0, (1 << 32) - 1, "a process id")
DEVICE = Whole(0, 1023, "a device number")
PORT = Whole(0, 65535, "a port")
EPOCH = Number(0, EPOCH_LIMIT, "seconds since 1970")
SECONDS = Number(0, EPOCH_LIMIT, "seconds")
FRACTION = Number(0, 1, "a fraction")

NVML_SAMPLE = Record({
    "t": SECONDS, "epoch": EPOCH, "phase": TEXT, "source": TEXT, "device_total": BYTES, "device_used": BYTES,
    "process_used": BYTES, "other_processes_used": BYTES,
    "processes": ListOf(Record({"pid": PID, "used": BYTES})),
})
RUN_FIGURES = {  # one run of an intervention (its baseline or result)
    "status": TEXT, "exit_code": EXIT_CODE, "oom": FLAG, "peak_allocated": BYTES, "peak_reserved": BYTES,
    "num_alloc_retries": COUNT, "duration_s": SECONDS,
}
CONFIRM_RUNS = Record({"oom": FLAG, "completed_steps": COUNT, "runs": COUNT})
FRAME = Record({"filename": TEXT, "line": Whole(0, 1 << 31, "a line number"), "name": TEXT})

# One line of the user's code as an experiment's run read it (the storing line's fix, measured)
SOURCE_EDIT = Record({"path": TEXT, "line": COUNT, "before": TEXT, "after": TEXT})

CAPTURE = Record({
    "format": TEXT, "version": Whole(0, 1 << 31, "a version number"), "run_id": TEXT,
    "snapshot": TEXT, "snapshot_moment": TEXT, "status": TEXT, "exit_code": EXIT_CODE, "pid": PID,
    "started_at": TEXT, "started_epoch": EPOCH, "duration_s": SECONDS, "ended_epoch": EPOCH,
    "script": TEXT, "argv": ListOf(TEXT, whole=True), "cwd": TEXT, "source_root": TEXT,
    "python": Record({"executable": TEXT, "version": TEXT}),
    "recording": Record({"stacks": TEXT, "max_entries": COUNT, "context": TEXT, "census": FLAG}),
    "census": TEXT, "peak_census": TEXT,  # the census files beside capture.json (format version 2)
    "frame_names": MapOf(ListOf(Row(COUNT, COUNT, TEXT))),  # library file -> [first line, last line, "Class.method"]
    "memory_limit": Record({"requested": TEXT, "fraction": FRACTION, "bytes": BYTES}),
    "environment": Record({
        "gpu_name": TEXT, "device_index": DEVICE, "gpu_uuid": TEXT, "total_memory": BYTES,
        "compute_capability": TEXT, "multiprocessors": COUNT, "driver": TEXT, "torch": TEXT, "cuda": TEXT,
        "cudnn": Either(COUNT, TEXT), "allocator_backend": TEXT, "allocator_settings": Plain(), "alloc_env": MapOf(TEXT),
    }),
    "exception": Record({"type": TEXT, "message": Text(200_000), "traceback": Text(1_000_000), "frames": ListOf(FRAME), "epoch": EPOCH}),
    "oom": Record({
        "device": DEVICE, "requested": BYTES, "device_limit": BYTES, "device_free": BYTES, "allocated": BYTES,
        "reserved": BYTES, "time": EPOCH, "count": COUNT, "nvml": NVML_SAMPLE,
        "caught_below_python": COUNT,  # OOMs libraries caught before Python saw them (format version 3)
    }),
    "stats": Record({key: COUNT for key in (
        "allocated", "reserved", "peak_allocated", "peak_reserved", "num_alloc_retries", "num_ooms",
        "num_device_alloc", "num_device_free")}),
    "exit_nvml": NVML_SAMPLE,
    "nvml_agent": Record({"available": FLAG, "error": TEXT}),
    "nvml": Record({"available": FLAG, "error": TEXT, "pid": PID, "samples": ListOf(NVML_SAMPLE)}),
    "interventions": ListOf(limit=MAX_ROWS, item=Record({
        "setting": TEXT, "capture": TEXT, "verdict": TEXT, **RUN_FIGURES,
        "baseline": Record(RUN_FIGURES), "result": Record(RUN_FIGURES),
    })),
    "experiment": Record({
        "file": TEXT, "sentence": TEXT, "stopped": TEXT,
        "chosen": Record({"source": TEXT, "index": COUNT, "label": TEXT, "text": TEXT}),
        "variants": ListOf(limit=MAX_ROWS, item=Record({"label": TEXT, "ooms": COUNT, "runs": COUNT, "verdict": TEXT,
                                   "peak_allocated": Number(0, BYTES_LIMIT, "bytes"),
                                   "peak_reserved": Number(0, BYTES_LIMIT, "bytes")})),
        "search": Record({"argument": TEXT, "limit": BYTES, "largest_fit": COUNT, "smallest_failure": COUNT,
                          "outcome": TEXT}),
    }),
    "distributed": Record({
        "rank": COUNT, "local_rank": COUNT, "world_size": COUNT, "local_world_size": COUNT, "node_rank": COUNT,
        "hostname": TEXT, "master_addr": TEXT, "master_port": Either(PORT, TEXT), "job_id": TEXT,
        "restart_count": COUNT, "device_index": DEVICE, "backend": TEXT,
    }),
    "confirmation": Record({  # experiments/confirm.py: the experiment that confirmed or revised the diagnosis
        "question": TEXT, "kind": TEXT, "expectation": TEXT, "diagnosed": TEXT, "alternative": TEXT, "experiment": TEXT,
        "baseline": CONFIRM_RUNS, "variant": CONFIRM_RUNS,
        "result": Record({"cause": TEXT, "verdict": TEXT, "sentence": TEXT}),
        "table": ListOf(limit=MAX_ROWS, item=Record({"label": TEXT, "ooms": COUNT, "runs": COUNT, "verdict": TEXT,
                                                      "peak_allocated": BYTES, "capture": TEXT, "edit": SOURCE_EDIT})),
    }),
    "source_edit": SOURCE_EDIT,  # the capture is of the program with this one line changed (agent/source_edit.py)
    "notebook": Section("capture/notebook.py"),  # a Jupyter kernel's capture: its cells and holders
    "notes": ListOf(TEXT, limit=MAX_ROWS),
})


def check_meta(raw: dict) -> tuple[dict, list[str]]:
    """capture.json's facts with every field of the documented type (None where it was not), and
    one note for the fields that were not."""
    wrong: list = []
    checked = CAPTURE.check(raw, "", wrong)
    if not wrong:
        return checked, []
    listed = ", ".join(f"{path} ({expected})" for path, expected in wrong[:MAX_NOTES])
    more = f" and {len(wrong) - MAX_NOTES} more" if len(wrong) > MAX_NOTES else ""
    return checked, [f"capture.json: fields not of the documented type were read as unknown: {listed}{more}."]
