"""Reading a census file (census.json, census-peak.json) into data the analysis can trust.

A capture may come from anywhere, so its census is untrusted input: the file's size is
bounded, every field the format documents (docs/capture-format.md) is checked for its type
and range, every reference between its tables is checked to point inside them, and fields
it does not document are dropped. Anything wrong is one sentence, naming the first field
that is wrong.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from vramlens.capture.errors import CaptureError
from vramlens.regular_files import FileProblem, read_regular_file

CENSUS_FORMAT = "vramlens-census"
MAX_FILE_BYTES = 32 * 2**20  # a census of 20,000 tensors is about 5 MiB
MAX_ITEMS = 1_000_000  # entries in any one list
MAX_TEXT = 65_536  # characters in any one string
MAX_BYTES = 2**63 - 1
MOMENTS = ("oom", "peak", "end", "on_demand")
ROLES = ("parameter", "buffer", "gradient", "optimizer_state", "cache", "frame_local", "held", "unreached")


class _Invalid(Exception):
    """``where`` and what is wrong with it, for the one sentence."""


def load_census(path: str | Path) -> dict:
    path = Path(path)
    if not os.path.lexists(path):
        raise CaptureError(f"The capture names {path.name}, but there is no such file beside it.")
    try:
        size = os.stat(path).st_size
    except OSError:
        size = 0  # said below, by the reader
    if size > MAX_FILE_BYTES:
        raise CaptureError(f"{path.name} is {size} bytes, more than a census can be "
                           f"({MAX_FILE_BYTES} bytes); it is not one vramlens wrote.")
    try:
        # A regular file only, read no further than the limit: a FIFO or a device never blocks the load.
        data = json.loads(read_regular_file(path, MAX_FILE_BYTES, "census").decode("utf-8"))
    except FileProblem as problem:
        raise CaptureError(f"The capture's census cannot be read: {problem}.") from None
    except RecursionError:
        raise CaptureError(f"{path.name} is nested too deeply to be a census.") from None
    except (OSError, ValueError) as error:  # JSONDecodeError, UnicodeDecodeError, an integer too long
        raise CaptureError(f"{path.name} is damaged and cannot be read ({_short(error)}).") from None
    try:
        return validate_census(data)
    except _Invalid as problem:
        raise CaptureError(f"{path.name} is not a valid census: {problem}.") from None


def _short(error: BaseException) -> str:
    return str(error)[:200]


# -- checks: each takes (value, where) and returns the clean value ------------------------
def integer(low: int = 0, high: int = MAX_BYTES):
    def check(value, where):
        if type(value) is not int or not low <= value <= high:
            raise _Invalid(f"{where} is not a whole number from {low} to {high}")
        return value
    return check


def number(high: float):
    """A number from 0 to ``high``, as a float. Compared before it is converted: an integer of 400
    digits is no float (OverflowError), and NaN is no number."""
    def check(value, where):
        if type(value) is int and 0 <= value <= high:
            return float(value)
        if type(value) is float and math.isfinite(value) and 0 <= value <= high:
            return value
        raise _Invalid(f"{where} is not a number from 0 to {high:g}")
    return check


EPOCH = number(1e11)  # seconds since 1970: year 5138
SECONDS = number(1e9)  # thirty years


def text(value, where):
    if type(value) is not str or len(value) > MAX_TEXT:
        raise _Invalid(f"{where} is not a text of at most {MAX_TEXT} characters")
    return value


def flag(value, where):
    if type(value) is not bool:
        raise _Invalid(f"{where} is not true or false")
    return value


def scalar(value, where):
    """A name or key: a text, a number, true/false or null."""
    if value is None or type(value) in (bool, int) or (type(value) is float and math.isfinite(value)):
        return value
    return text(value, where)


def optional(check):
    def optional_check(value, where):
        return None if value is None else check(value, where)
    return optional_check


def choice(*allowed):
    def check(value, where):
        if value not in allowed or type(value) is not str:
            raise _Invalid(f"{where} is not one of {', '.join(allowed)}")
        return value
    return check


def items(check, limit: int = MAX_ITEMS):
    def check_list(value, where):
        if type(value) is not list or len(value) > limit:
            raise _Invalid(f"{where} is not a list of at most {limit} entries")
        return [check(item, f"{where}[{position}]") for position, item in enumerate(value)]
    return check_list


def mapping(check, limit: int = 10_000):
    def check_mapping(value, where):
        if type(value) is not dict or len(value) > limit:
            raise _Invalid(f"{where} is not an object of at most {limit} entries")
        return {text(key, f"{where} key"): check(item, f"{where}.{key}") for key, item in value.items()}
    return check_mapping


_ABSENT = object()


def record(required: dict, optional_fields: dict | None = None):
    """An object with these fields (unknown ones dropped); optional ones may be absent or null
    (and are null in the clean object then)."""
    optional_fields = optional_fields or {}

    def check(value, where):
        if type(value) is not dict:
            raise _Invalid(f"{where} is not an object")
        clean = {}
        for name, field_check in required.items():
            found = value.get(name, _ABSENT)
            if found is _ABSENT:
                raise _Invalid(f"{where} has no {name}")
            clean[name] = field_check(found, f"{where}.{name}" if where else name)
        for name, field_check in optional_fields.items():
            found = value.get(name)
            clean[name] = None if found is None else field_check(found, f"{where}.{name}" if where else name)
        return clean
    return check


# -- the census --------------------------------------------------------------------------
COUNT = integer()
BYTES = integer()
FRAME = record({"filename": text, "line": optional(integer()), "name": text})
GROUP_FIELDS = {"count": COUNT, "bytes": BYTES}


def validate_census(data) -> dict:
    if type(data) is not dict:
        raise _Invalid("it is not a JSON object")
    if data.get("format") != CENSUS_FORMAT:
        raise _Invalid(f"its format is not {CENSUS_FORMAT}")
    head = record(
        {"version": integer(1, 1000), "moment": choice(*MOMENTS), "epoch": EPOCH, "duration_s": SECONDS,
         "complete": flag, "skipped": items(text, 10_000), "notes": items(text, 10_000)},
        {"budget_s": SECONDS, "objects_scanned": COUNT,
         "thread": record({"main": flag}, {"name": text}),
         "grad_mode": record({}, {"grad_enabled": flag, "inference_mode": flag}),
         "main_stack": items(FRAME), "main_stack_omitted": COUNT,
         "device": record({"index": integer(0, 1 << 16), "allocated": BYTES, "reserved": BYTES}),
         "holder_search": mapping(optional(scalar), 100), "peaks_taken": COUNT,
         "without_storage": mapping(COUNT, 10_000)},
    )(data, "")
    head["format"] = CENSUS_FORMAT
    head["notes"] = _bounded_notes(head["notes"])
    storages = items(record({"ptr": BYTES, "bytes": BYTES, "device": integer(-1, 1 << 16), "role": choice(*ROLES),
                             "owner": optional(integer()), "tensors": COUNT}))(_field(data, "storages"), "storages")
    tensors = items(record(
        {"storage": integer(0, len(storages) - 1) if storages else _nothing("storages is empty"),
         "shape": items(integer(), 64), "dtype": text, "element_size": integer(1, 64), "offset": integer(),
         "requires_grad": flag, "grad_fn": optional(text), "leaf": flag},
        {"class": text}))(_field(data, "tensors"), "tensors")
    tensor = integer(0, len(tensors) - 1) if tensors else _nothing("tensors is empty")
    listed = items(tensor)
    group = record(dict(GROUP_FIELDS, listed=listed))
    named = record(dict(GROUP_FIELDS, listed=items(record({"name": text, "tensor": tensor}))))
    clean = dict(head, storages=storages, tensors=tensors)
    figures = record({"storages": COUNT, "bytes": BYTES})
    clean["totals"] = record({"tensors": COUNT, "storages": COUNT, "bytes": BYTES})(_field(data, "totals"), "totals")
    clean["roles"] = record({role: figures for role in ROLES})(_field(data, "roles"), "roles")
    clean["unlisted"] = record({"tensors": COUNT, "storages": COUNT, "bytes": BYTES})(_field(data, "unlisted"), "unlisted")
    bound_to = items(text, 100)
    classes = {"class": text}
    classes_optional = {"python_module": text, "bound_to": bound_to}
    clean["modules"] = items(record(
        dict(classes, parameters=named, buffers=named, gradients=named, aliases=COUNT, other_device=COUNT),
        classes_optional))(_field(data, "modules"), "modules")
    module_index = integer(0, len(clean["modules"]) - 1) if clean["modules"] else _nothing("modules is empty")
    clean["optimizers"] = items(record(
        dict(classes, params=record(GROUP_FIELDS),
             state=record(dict(GROUP_FIELDS, by_key=mapping(BYTES), listed=items(record(
                 {"tensor": tensor, "key": text}, {"param": text, "module": module_index}))))),
        dict(classes_optional, step=integer())))(_field(data, "optimizers"), "optimizers")
    clean["caches"] = items(record(
        dict(classes, kind=choice("kv_cache", "cache"), tensors=group, truncated=flag),
        dict(classes_optional, module=record({"root": module_index, "path": text}))))(_field(data, "caches"), "caches")
    clean["frame_locals"] = items(record(
        {"name": text, "function": text, "filename": text, "container": text, "tensors": group},
        {"line": integer(), "thread": text, "length": COUNT}))(_field(data, "frame_locals"), "frame_locals")
    step = record({"edge": text}, {"name": scalar, "type": text, "module": text, "function": text,
                                   "filename": text, "line": integer(), "thread": text})
    container = record({"kind": text}, {"type": text, "length": COUNT, "module": text, "function": text,
                                        "filename": text, "line": integer(), "thread": text})
    clean["holders"] = items(record(
        {"container": container, "names": items(scalar, 1000), "found_by": choice("walk", "referrers"),
         "search": choice("rooted", "no_root", "limit"), "tensors": group},
        {"path": text, "chain": items(step, 1000)}))(_field(data, "holders"), "holders")
    clean["unreached"] = record({"storages": COUNT, "bytes": BYTES,
                                 "tensors": record({"count": COUNT, "listed": listed})})(_field(data, "unreached"), "unreached")
    _check_owners(storages, {table: len(clean[table]) for table in set(_OWNER_TABLE.values())})
    if data.get("graphs") is not None:
        clean["graphs"] = _graphs(data["graphs"], len(storages))
    return clean


GRAPH_MECHANISMS = ("saved_tensor_data", "producer")


def _graphs(value, storage_count: int) -> dict:
    """The autograd graphs' table (absent before the graph walk existed): owners and the storages their graphs keep."""
    storage = integer(0, storage_count - 1) if storage_count else _nothing("storages is empty")
    kept = items(record({"ptr": BYTES, "device": integer(-1, 1 << 16), "bytes": BYTES, "python_visible": flag,
                         "owners": items(COUNT, 16), "shared": flag}, {"storage": storage}))
    clean = record(
        {"mechanism": choice(*GRAPH_MECHANISMS),
         "totals": record({"storages": COUNT, "bytes": BYTES, "not_python_visible_bytes": BYTES}),
         "unlisted": record({"storages": COUNT, "bytes": BYTES})},
        {"owners_asked": COUNT, "owners_walked": COUNT, "nodes": COUNT, "saved": COUNT, "hooked": COUNT,
         "hooked_kept": COUNT, "empty": COUNT, "unreadable": COUNT, "cut": choice("time", "nodes")})(value, "graphs")
    clean["storages"] = kept(_field(value, "storages"), "graphs.storages")
    listed = items(integer(0, len(clean["storages"]) - 1) if clean["storages"] else _nothing("graphs.storages is empty"))
    clean["owners"] = items(record(
        {"role": choice(*ROLES), "roots": COUNT, "nodes": COUNT, "storages": COUNT, "bytes": BYTES,
         "exclusive_bytes": BYTES, "python_visible_bytes": BYTES, "named_elsewhere": COUNT, "listed": listed},
        {"owner": COUNT, "passes": COUNT}))(_field(value, "owners"), "graphs.owners")
    for position, kept_storage in enumerate(clean["storages"]):
        if any(owner >= len(clean["owners"]) for owner in kept_storage["owners"]):
            raise _Invalid(f"graphs.storages[{position}].owners refers past graphs.owners")
    return clean


MAX_NOTES = 20  # a census' own notes shown; the agent writes a handful
MAX_NOTE_CHARS = 500


def _bounded_notes(notes: list[str]) -> list[str]:
    """The first notes, each cut to a line's length: ten thousand of them are not ten thousand lines of output."""
    shown = [note if len(note) <= MAX_NOTE_CHARS else note[:MAX_NOTE_CHARS] + "…" for note in notes[:MAX_NOTES]]
    if len(notes) > MAX_NOTES:
        shown.append(f"The census holds {len(notes) - MAX_NOTES} more notes, not shown.")
    return shown


def _field(data: dict, name: str):
    if name not in data:
        raise _Invalid(f"it has no {name}")
    return data[name]


def _nothing(reason: str):
    def check(value, where):
        raise _Invalid(f"{where} refers to an entry, but {reason}")
    return check


_OWNER_TABLE = {"parameter": "modules", "buffer": "modules", "gradient": "modules", "optimizer_state": "optimizers",
                "cache": "caches", "frame_local": "frame_locals", "held": "holders"}


def _check_owners(storages: list, sizes: dict) -> None:
    """Each storage's owner is an entry of its role's table (none for the unreached)."""
    for position, storage in enumerate(storages):
        table, owner = _OWNER_TABLE.get(storage["role"]), storage.get("owner")
        if table is None:
            continue
        if owner is None or owner >= sizes[table]:
            raise _Invalid(f"storages[{position}].owner is not an entry of {table}")
