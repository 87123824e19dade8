"""How the run ended, in words. "No OOM" is not "completed": a run can also raise, exit non-zero,
time out, be interrupted, or be snapshotted while it goes on (on demand, or a raw server dump)."""

from __future__ import annotations

import os
import re

from vramlens.capture import CaptureError

SNAPSHOT = "snapshot"  # the status given to a raw pickle: how its run ended is not recorded
MID_RUN = ("on_demand", SNAPSHOT)  # the snapshot was taken while the process went on
_FILE_LINE = re.compile(r'File "([^"\n]+)", line (\d+)')


class ScriptEndedEarly(CaptureError):
    """The script failed before any CUDA allocation: one sentence, plus the script's traceback."""

    def __init__(self, sentence: str, details: str | None):
        super().__init__(sentence)
        self.details = details


PREEMPTIVE_REJECTION = "Allocation was preemptively rejected"  # torch 2.12+, under a per-process fraction


def rejection_note(meta: dict) -> str | None:
    """What a torch 2.12+ preemptive rejection means, when the run ended with one."""
    message = (meta.get("exception") or {}).get("message") or ""
    if PREEMPTIVE_REJECTION not in message:
        return None
    return ("torch rejected the failing request before asking the device: it would have exceeded the per-process "
            "memory fraction (set_per_process_memory_fraction, or vramlens --memory-limit), so the device itself "
            "may still have had room.")


def run_status(meta: dict) -> str:
    """capture.json's status, or "snapshot" for a raw pickle (no facts recorded)."""
    return (meta.get("status") or "unknown") if meta else SNAPSHOT


def taken_mid_run(status: str | None) -> bool:
    return status in MID_RUN


def exception_name(meta: dict) -> str | None:
    kind = (meta.get("exception") or {}).get("type")
    return str(kind).rsplit(".", 1)[-1] if kind else None


def _after(meta: dict) -> str:
    seconds = meta.get("duration_s")
    return f" after {seconds:.0f} s" if isinstance(seconds, (int, float)) else ""


def ending_phrase(meta: dict, status: str) -> str:
    """e.g. "the script completed", "ended by --timeout after 12 s", "the script raised ValueError"."""
    error, code, after = exception_name(meta), meta.get("exit_code"), _after(meta)
    phrases = {
        "completed": "the script completed",
        "oom": "the script ended with an out-of-memory error",
        "error": f"the script raised {error}" if error else "the script raised an exception",
        "exit": f"the script exited with code {code}" if code is not None else "the script exited with an error code",
        "interrupted": f"the script was interrupted (Ctrl-C){after}",
        "timeout": f"ended by --timeout{after}",
        "terminated": f"the script was terminated by a signal{after}" + (f" (exit code {code})" if code else ""),
        "on_demand": f"snapshot taken on demand{after} while the script was running; how it ended is not recorded",
        SNAPSHOT: "raw snapshot: how the run ended is unknown",
    }
    return phrases.get(status, f"the run ended with status {status!r}")


def outcome_line(outcome: str, meta: dict, status: str) -> str:
    """The human outcome, e.g. "no OOM; ended by --timeout after 12 s" (the OOM case is said elsewhere)."""
    if status == SNAPSHOT:
        return "raw snapshot: how the run ended is unknown; no OOM in its trace"
    if status == "completed":
        return "completed, no OOM"
    return "no OOM; " + ending_phrase(meta, status)


def no_oom_sentence(meta: dict, status: str) -> str:
    """The first sentence of a run without an OOM: it must not claim the run completed when it did not."""
    if status == "completed":
        return "The run completed without an OOM"
    if status == SNAPSHOT:
        return "A raw snapshot (how the run ended is unknown) whose trace holds no OOM"
    if status == "on_demand":
        return f"The snapshot was taken on demand{_after(meta)} while the script was running; no OOM up to then"
    return f"No OOM, but the run did not complete: {ending_phrase(meta, status)}"


# The moment an analysis is about, in words: (in a title or a sentence, on a line's figure). Every renderer
# takes both from here; the snapshot taken while the run went on names its moment in the long form.
MOMENTS = {"oom": ("at the OOM", "at the OOM"), "peak": ("at the allocated peak", "at the peak"),
           "end": ("at the end of the trace", "at the end")}
MID_RUN_MOMENTS = {"peak": "at the allocated peak, up to the moment the snapshot was taken",
                   "end": "at the moment the snapshot was taken"}


def moment_words(moment: str, status: str | None) -> str:
    """"at the OOM", "at the allocated peak", … with the snapshot's moment named when the run went on."""
    if taken_mid_run(status) and moment in MID_RUN_MOMENTS:
        return MID_RUN_MOMENTS[moment]
    return MOMENTS[moment][0]


def moment_short(moment: str) -> str:
    """The moment on a line's figure or a column's head: "at the OOM", "at the peak", "at the end"."""
    return MOMENTS[moment][1] if moment in MOMENTS else "at the moment"


def _failure_site(exception: dict, source_root: str | None) -> str | None:
    """``syn.py:1``: the innermost frame under the source root (else the innermost one). A SyntaxError
    has no frame of the script, only its traceback text, so both are read."""
    sites = [(f.get("filename"), f.get("line")) for f in exception.get("frames") or () if isinstance(f, dict)]
    sites += [(name, int(line)) for name, line in _FILE_LINE.findall(exception.get("traceback") or "")]
    sites = [(name, line) for name, line in sites if name]
    if not sites:
        return None
    root = (source_root or "").rstrip("/") + "/"
    inside = [site for site in sites if source_root and site[0].startswith(root)]
    name, line = (inside or sites)[-1]
    return f"{os.path.basename(name)}:{line}"


def nothing_recorded(meta: dict) -> CaptureError:
    """The error for a capture whose trace is empty, saying why rather than how to record one."""
    exception = meta.get("exception") or {}
    if not meta:
        return CaptureError(
            "The snapshot holds no allocator trace: record it with torch.cuda.memory._record_memory_history() "
            "before the allocations (or use `vramlens run`)."
        )
    if exception:
        site = _failure_site(exception, meta.get("source_root"))
        sentence = (f"The script ended with {exception_name(meta) or 'an exception'}"
                    f"{f' at {site}' if site else ''} before any CUDA allocation; nothing to analyze.")
        return ScriptEndedEarly(sentence, exception.get("traceback") or exception.get("message"))
    status = run_status(meta)
    return CaptureError(f"No CUDA allocation was recorded ({ending_phrase(meta, status)}); nothing to analyze.")


def caught_below_python(meta: dict) -> int | None:
    """How many of the run's OOMs libraries caught before any Python code saw them (cuDNN's workspace
    probes), when the recording knew (captures from 2026-12 on, Python 3.12+); None otherwise."""
    oom = meta.get("oom") if isinstance(meta.get("oom"), dict) else None
    caught = (oom or {}).get("caught_below_python")
    return caught if isinstance(caught, int) and not isinstance(caught, bool) and caught >= 0 else None


def only_library_probes(meta: dict) -> bool:
    """The run completed (exit 0) and every OOM it hit was caught inside a library: it did not run out."""
    oom = meta.get("oom") if isinstance(meta.get("oom"), dict) else {}
    count, caught = oom.get("count"), caught_below_python(meta)
    return (run_status(meta) == "completed" and meta.get("exit_code") in (0, None) and isinstance(count, int)
            and count > 0 and caught == count)


def caught_ooms_note(meta: dict, oom_count: int) -> str | None:
    """What the OOMs the run went on from were, as far as the capture can tell."""
    caught, status = caught_below_python(meta), run_status(meta)
    if only_library_probes(meta):
        return (f"The run hit {oom_count} OOM{'s' if oom_count != 1 else ''} that libraries caught before any Python "
                "code saw them (cuDNN and cuBLAS try workspace sizes and fall back to a smaller one): the run fit, "
                "though those calls may have used slower algorithms.")
    probes = f" {caught} of them were caught inside libraries before any Python code saw them (cuDNN and cuBLAS " \
             "workspace probes)." if caught else ""
    if status not in ("oom", SNAPSHOT, "unknown") and oom_count:
        if caught is None:
            return (f"The run hit {oom_count} OOM{'s' if oom_count != 1 else ''} and still ended with status {status!r}: "
                    "each was caught, by a library that retries with less memory (cuDNN tries smaller workspaces) or "
                    "by the script itself; the analysis is about the last.")
        return (f"The run hit {oom_count} OOM{'s' if oom_count != 1 else ''} and went on (status {status!r}): "
                f"the script caught {oom_count - caught} of them.{probes}")
    if caught:
        return f"Of the run's {oom_count} OOMs, {caught} were caught inside libraries before any Python code saw " \
               "them (cuDNN and cuBLAS workspace probes); the one analysed is the one that reached the script."
    return None
