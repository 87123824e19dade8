"""Allocator experiments already tried on this run (capture.json ``interventions``), read the same
way whichever layout recorded them: {setting, verdict, baseline{…}, result{…}} or {setting, status, …}."""

from __future__ import annotations

from dataclasses import dataclass, field

from vramlens.units import format_bytes as fmt


@dataclass
class Intervention:
    """An allocator setting tried by `vramlens experiment`, and whether it prevented the OOM."""

    setting: str
    prevented_oom: bool | None  # None when the record cannot tell
    verdict: str
    baseline: dict = field(default_factory=dict)
    result: dict = field(default_factory=dict)

    def summary(self) -> str:
        """One sentence, e.g. "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True prevented the OOM (peak reserved 1.50 GiB → 1.50 GiB)"."""
        before, after = self.baseline.get("peak_reserved"), self.result.get("peak_reserved")
        measured = ""
        if after is not None:
            measured = f" (peak reserved {fmt(before)} → {fmt(after)})" if before is not None else f" (peak reserved {fmt(after)})"
        return f"{self.setting} {self.verdict}{measured}"


def read_interventions(meta: dict) -> list[Intervention]:
    tried = []
    for item in meta.get("interventions") or []:
        if not isinstance(item, dict) or not item.get("setting"):
            continue
        result = item.get("result") if isinstance(item.get("result"), dict) else {
            k: v for k, v in item.items() if k not in ("setting", "verdict", "baseline", "capture")}
        baseline = item.get("baseline") if isinstance(item.get("baseline"), dict) else {}
        status = result.get("status")
        prevented = None
        if "oom" in result:
            prevented = not result["oom"]
        elif status:
            prevented = status == "completed"
        verdict = item.get("verdict") or (
            "prevented the OOM" if prevented else "did not prevent the OOM" if prevented is False else f"ended {status or 'unknown'}")
        tried.append(Intervention(str(item["setting"]), prevented, verdict, baseline, result))
    return tried


def tried_knob(tried: list[Intervention], knob: str) -> Intervention | None:
    """The experiment that set ``knob`` (e.g. "expandable_segments"), if one was run."""
    return next((item for item in tried if knob in item.setting), None)
