"""A diagnosis confirmed or revised by measurement (`vramlens run --confirm`, the editor's
"Confirm the diagnosis"): the runner writes the verdict into capture.json as ``confirmation``;
every later analysis of the capture shows it, and a revised cause replaces the inferred one."""

from __future__ import annotations

from vramlens.analysis.model import Diagnosis

CAUSES = ("working_set", "retained_references", "fragmentation", "outside_allocator")


def apply_confirmation(diagnosis: Diagnosis, record) -> None:
    if not isinstance(record, dict) or not isinstance(record.get("result"), dict):
        return
    result = record["result"]
    verdict, sentence, cause = result.get("verdict"), result.get("sentence"), result.get("cause")
    if not isinstance(sentence, str) or verdict not in ("confirmed", "revised", "inconclusive"):
        return
    table = "; ".join(f"{row.get('label')}: {row.get('ooms')}/{row.get('runs')} OOM"
                      for row in record.get("table") or () if isinstance(row, dict))
    measured = sentence + (f" ({table})" if table else "")
    diagnosis.measured = measured
    if verdict == "confirmed":
        diagnosis.confidence = max(diagnosis.confidence, 0.9)
        diagnosis.alternative = None
    elif verdict == "revised" and cause in CAUSES and cause != diagnosis.cause:
        diagnosis.evidence.insert(0, f"Inferred from the trace: {diagnosis.cause}; the measurement decided otherwise.")
        diagnosis.cause, diagnosis.confidence, diagnosis.alternative = cause, 0.9, None
    diagnosis.evidence.insert(0, measured)
