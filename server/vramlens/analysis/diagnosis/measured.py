"""A diagnosis confirmed or revised by measurement (`vramlens run --confirm`, the editor's
"Confirm the diagnosis"): the runner writes the verdict into capture.json as ``confirmation``;
every later analysis of the capture shows it, and a revised cause replaces the inferred one."""

from __future__ import annotations

import dataclasses

from vramlens.analysis.model import Diagnosis

CAUSES = ("working_set", "retained_references", "fragmentation", "outside_allocator")


def with_confirmation(diagnosis: Diagnosis, record) -> Diagnosis:
    """The diagnosis as the recorded measurement leaves it (the same one when there is none)."""
    if not isinstance(record, dict) or not isinstance(record.get("result"), dict):
        return diagnosis
    result = record["result"]
    verdict, sentence, cause = result.get("verdict"), result.get("sentence"), result.get("cause")
    if not isinstance(sentence, str) or verdict not in ("confirmed", "revised", "inconclusive"):
        return diagnosis
    table = "; ".join(f"{row.get('label')}: {row.get('ooms')}/{row.get('runs')} OOM"
                      for row in record.get("table") or () if isinstance(row, dict))
    measured = sentence + (f" ({table})" if table else "")
    evidence, changes = list(diagnosis.evidence), {}
    if verdict == "confirmed":
        changes = {"confidence": max(diagnosis.confidence, 0.9), "alternative": None}
    elif verdict == "revised" and cause in CAUSES and cause != diagnosis.cause:
        evidence.insert(0, f"Inferred from the trace: {diagnosis.cause}; the measurement decided otherwise.")
        changes = {"cause": cause, "confidence": 0.9, "alternative": None}
    return dataclasses.replace(diagnosis, measured=measured, evidence=[measured, *evidence], **changes)
