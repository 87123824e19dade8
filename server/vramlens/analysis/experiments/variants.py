"""What an experiment may change from outside the script, one thing at a time.

A variant is the baseline run with exactly one difference: an allocator setting, a memory limit
(an emulated smaller card), one value of a script argument, or one line of the user's code as a fix
would rewrite it (the storing line's edit, applied inside the recorded process only: the file on disk
is never touched). The first three are written the same way on the command line and in the editor's
request, e.g. ``expandable_segments:True``, ``memory-limit=24GiB``, ``--batch-size=8,16,32``; an edit
comes from the storing line's proven fix (experiments/store_fix.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vramlens.analysis.load.sources import place_of

ALLOC_CONF_VAR = "PYTORCH_CUDA_ALLOC_CONF"  # read by every torch release; newer ones also read PYTORCH_ALLOC_CONF
ALLOCATOR_KEYS = ("expandable_segments", "max_split_size_mb", "garbage_collection_threshold",
                  "roundup_power2_divisions", "pinned_use_cuda_host_register", "release_lock_on_cudamalloc",
                  "backend", "max_non_split_rounding_mb", "pinned_num_register_threads")
MEMORY_LIMIT_PREFIX = "memory-limit="
_SETTING = re.compile(r"^([a-z_0-9]+):(.+)$")


@dataclass(frozen=True)
class SourceEdit:
    """One line of a source file as the run should read it: ``before`` must still be the line's text."""

    path: str  # the file as the run imports it (absolute)
    line: int  # 1-based
    before: str  # the whole line as it is on disk
    after: str  # the whole line as the run reads it

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "before": self.before, "after": self.after}

    @classmethod
    def from_json(cls, data) -> "SourceEdit | None":
        if not isinstance(data, dict):
            return None
        path, line, before, after = (data.get(key) for key in ("path", "line", "before", "after"))
        if not (isinstance(path, str) and isinstance(line, int) and isinstance(before, str) and isinstance(after, str)):
            return None
        return cls(path, line, before, after)

    @property
    def place(self) -> str:
        return place_of(self.path, self.line)  # ``train.py:42``, as every place is named


@dataclass(frozen=True)
class Variant:
    kind: str  # "baseline" | "allocator" | "memory_limit" | "argument" | "edit"
    alloc_conf: str | None = None  # e.g. "expandable_segments:True"
    memory_limit: str | None = None  # as the user wrote it, e.g. "24GiB"
    argument: str | None = None  # the script's flag, e.g. "--batch-size"
    value: str | None = None
    edit: SourceEdit | None = None

    @property
    def label(self) -> str:
        if self.kind == "edit" and self.edit is not None:
            return f"{self.edit.after.strip()} at {self.edit.place}"
        if self.kind == "allocator":
            return f"{ALLOC_CONF_VAR}={self.alloc_conf}"
        if self.kind == "memory_limit":
            return f"memory limit {self.memory_limit}"
        if self.kind == "argument":
            return f"{self.argument} {self.value}"
        return "baseline"

    @property
    def slug(self) -> str:
        """A folder name for its runs' captures."""
        if self.kind == "edit" and self.edit is not None:
            return "edit-" + re.sub(r"[^A-Za-z0-9]+", "-", self.edit.place).strip("-").lower()
        return re.sub(r"[^A-Za-z0-9]+", "-", self.label).strip("-").lower() or "baseline"


BASELINE = Variant("baseline")


def parse_variant(spec: str) -> list[Variant]:
    """One spec → its variants; ValueError with the accepted forms when it is none of them."""
    text = spec.strip()
    if text.startswith(MEMORY_LIMIT_PREFIX):
        return [Variant("memory_limit", memory_limit=text[len(MEMORY_LIMIT_PREFIX):])]
    if text.startswith("-"):
        flag, values = split_argument_values(text)
        return [Variant("argument", argument=flag, value=value) for value in values]
    match = _SETTING.match(text)
    if match and match.group(1) in ALLOCATOR_KEYS:
        return [Variant("allocator", alloc_conf=text)]
    raise ValueError(f"{spec!r} is not a variant: write an allocator setting (expandable_segments:True), "
                     f"{MEMORY_LIMIT_PREFIX}SIZE, or --ARG=V1,V2,...")


def split_argument_values(text: str) -> tuple[str, list[str]]:
    """``batch-size=8,16`` or ``--batch-size=8,16`` → ("--batch-size", ["8", "16"])."""
    flag, sign, values = text.partition("=")
    flag = flag if flag.startswith("-") else f"--{flag}"
    items = [value.strip() for value in values.split(",") if value.strip()]
    if not sign or flag.strip("-") == "" or not items:
        raise ValueError(f"{text!r}: write the argument and its values as --ARG=V1,V2,... (e.g. --batch-size=8,16,32)")
    return flag, items


def parse_variants(specs: list[str]) -> list[Variant]:
    """The baseline first, then each spec's variants in order, duplicates dropped."""
    variants = [BASELINE]
    for spec in specs:
        for variant in parse_variant(spec):
            if variant not in variants:
                variants.append(variant)
    return variants


def with_argument(args: list[str], flag: str, value: str) -> list[str]:
    """The script's arguments with ``flag`` set to ``value``: replaced where given, else appended."""
    out, position, replaced = [], 0, False
    while position < len(args):
        arg = args[position]
        if arg == flag and position + 1 < len(args):
            out += [flag, value]
            position += 2
            replaced = True
            continue
        if arg.startswith(flag + "="):
            out.append(f"{flag}={value}")
            replaced = True
        else:
            out.append(arg)
        position += 1
    return out if replaced else out + [flag, value]


def alloc_conf_env(current: str | None, setting: str) -> dict[str, str]:
    """The environment that adds ``setting`` to whatever allocator configuration is already in force."""
    value = f"{current},{setting}" if current else setting
    # Both names, so that no older value under the other one silently wins.
    return {ALLOC_CONF_VAR: value, "PYTORCH_ALLOC_CONF": value}
