"""experiment.json (what `vramlens experiment` writes, docs/experiments.md), checked where it enters.

Only the measured runs are read: each variant's kind and setting, each run's figures, the search's
bounds and probes. Everything derived from them (medians, verdicts, the choice, the fit) is worked
out again by the analysis from these, so a file cannot make the report say what its runs do not
show, and fields a newer version may add are dropped. A figure of the wrong type or out of its
range (NaN, 1e400, a negative size) reads as unknown; a skeleton of the wrong shape is one sentence.
Lists and texts are bounded: more variants, runs or characters than any experiment has are cut.
"""

from __future__ import annotations

from pathlib import Path

from vramlens.capture.errors import CaptureError
from vramlens.capture.meta_shape import BYTES, EXIT_CODE, FLAG, SECONDS, TEXT, Record, Whole

SCHEMA = "vramlens-experiment"
MAX_FILE_BYTES = 16 << 20  # 20 variants × 20 runs is tens of kilobytes
MAX_VARIANTS = 64
MAX_RUNS = 100  # per variant (the editor allows 20 repeats)
MAX_PROBES = 64  # a bisection over 2**63 values takes 63
MAX_ARGS = 256
MAX_TEXT = 4096  # characters of any one text
KINDS = ("baseline", "allocator", "memory_limit", "argument")
VALUE = Whole(-(1 << 62), 1 << 62, "a whole number")

RUN = Record({"status": TEXT, "exit_code": EXIT_CODE, "oom": FLAG, "peak_allocated": BYTES, "peak_reserved": BYTES,
              "driver_peak": BYTES, "oom_cached": BYTES, "oom_reserved": BYTES, "duration_s": SECONDS,
              "capture": TEXT})
RUN_TEXTS = ("status", "capture")


class ExperimentShapeError(CaptureError):
    """experiment.json is not one `vramlens experiment` wrote; the message is one sentence."""


def text(value) -> str | None:
    """A text, cut to MAX_TEXT characters; None for anything else."""
    if type(value) is not str:
        return None
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + "…"


def _run(raw) -> dict:
    run = RUN.check(raw, "", []) if type(raw) is dict else {}
    run = {name: run.get(name) for name in RUN.fields}
    for name in RUN_TEXTS:
        run[name] = text(raw.get(name)) if type(raw) is dict else None
    run["oom"] = bool(run["oom"])
    return run


def _runs(raw, where: str, file: Path) -> list[dict]:
    if raw is None:
        return []
    if type(raw) is not list:
        raise ExperimentShapeError(f"{file} lists the runs of {where} in a shape `vramlens experiment` never writes.")
    return [_run(item) for item in raw[:MAX_RUNS]]


def _variant(raw, position: int, file: Path) -> dict:
    if type(raw) is not dict or raw.get("kind") not in KINDS:
        raise ExperimentShapeError(f"{file} holds a variant (number {position + 1}) that is not one of the kinds "
                                   f"`vramlens experiment` runs ({', '.join(KINDS)}).")
    return {"kind": raw["kind"], **{name: text(raw.get(name)) for name in ("alloc_conf", "memory_limit", "argument", "value")},
            "runs": _runs(raw.get("runs"), f"variant {position + 1}", file)}


def _search(raw, file: Path) -> dict | None:
    if raw is None:
        return None
    if type(raw) is not dict or text(raw.get("argument")) is None or text(raw.get("limit")) is None \
            or not VALUE.valid(raw.get("lo")):
        raise ExperimentShapeError(f"{file} holds a search without the argument, limit and lowest value it searched.")
    probes = raw.get("probes") or []
    if type(probes) is not list:
        raise ExperimentShapeError(f"{file} lists its search's probes in a shape `vramlens experiment` never writes.")
    checked = [dict(_run(probe), value=probe["value"]) for probe in probes[:MAX_PROBES]
               if type(probe) is dict and VALUE.valid(probe.get("value"))]
    return {"argument": text(raw["argument"]), "limit": text(raw["limit"]),
            "limit_bytes": raw.get("limit_bytes") if BYTES.valid(raw.get("limit_bytes")) else None,
            "lo": raw["lo"], "hi": raw.get("hi") if VALUE.valid(raw.get("hi")) else None,
            "step": raw.get("step") if VALUE.valid(raw.get("step")) and raw["step"] > 0 else 1, "probes": checked}


def check_experiment(raw, file: Path) -> dict:
    """The measured part of an experiment.json, checked and bounded (the shape ``record_from_json`` reads)."""
    if type(raw) is not dict or raw.get("schema") != SCHEMA:
        raise ExperimentShapeError(f"{file} is neither a capture nor a VRAM Lens experiment (the experiment.json "
                                   "`vramlens experiment` writes).")
    variants = raw.get("variants")
    if type(variants) is not list:
        raise ExperimentShapeError(f"{file} has no list of variants, so it is not an experiment `vramlens experiment` wrote.")
    args = raw.get("args")
    repeats = raw.get("repeats")
    return {
        "script": text(raw.get("script")) or "",
        "args": [text(arg) for arg in args[:MAX_ARGS] if type(arg) is str] if type(args) is list else [],
        "repeats": repeats if type(repeats) is int and 1 <= repeats <= MAX_RUNS else 1,
        "memory_limit": text(raw.get("memory_limit")),
        "output_dir": text(raw.get("output_dir")),
        "stopped": text(raw.get("stopped")),
        "variants": [_variant(item, position, file) for position, item in enumerate(variants[:MAX_VARIANTS])],
        "search": _search(raw.get("search"), file),
    }
