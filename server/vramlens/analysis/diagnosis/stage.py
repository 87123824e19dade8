"""The diagnosis stage: the cause, built once from everything known about it — the classifier's
reading of the numbers, a measurement recorded since (``confirmation``), the experiment that would
decide a close call, the interventions already tried, what a notebook's kernel itself kept alive,
and where the failing request was made."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from vramlens.analysis.accounting.stage import Accounted
from vramlens.analysis.attribution.lines import backward_seen
from vramlens.analysis.attribution.request_site import site_sentence
from vramlens.analysis.attribution.stage import Attributed
from vramlens.analysis.diagnosis.cache_growth import cache_as_designed
from vramlens.analysis.diagnosis.classify import RunFacts, classify, effective_limit
from vramlens.analysis.diagnosis.confirm import plan_for
from vramlens.analysis.diagnosis.kernel_held import kernel_held_findings
from vramlens.analysis.diagnosis.measured import with_confirmation
from vramlens.analysis.diagnosis.mode import main_thread_in_backward, run_mode
from vramlens.analysis.load.ending import no_oom_sentence
from vramlens.analysis.load.stage import Loaded
from vramlens.analysis.model import Diagnosis, Recommendation
from vramlens.analysis.replay.stage import Replayed
from vramlens.analysis.steps.stage import Steps


@dataclass(frozen=True)
class Diagnosed:
    """The diagnosis stage's result: the diagnosis and the facts it read."""

    diagnosis: Diagnosis
    facts: RunFacts  # what the classification read beyond the accounting (the advice reads it too)
    kernel_advice: list[Recommendation]  # a notebook's: free what the kernel itself keeps, first of all


def diagnose(loaded: Loaded, replayed: Replayed, steps: Steps, accounted: Accounted, attributed: Attributed) -> Diagnosed:
    meta, outcome, accounting = loaded.meta, replayed.outcome, accounted.accounting
    facts = _run_facts(loaded, replayed, steps, attributed)
    diagnosis = with_confirmation(classify(accounting, attributed.lines, facts), meta.get("confirmation"))
    plan = None if diagnosis.measured or outcome != "oom" else plan_for(
        diagnosis, meta, effective_limit(accounting), cache_as_designed(facts.growth, facts.mode))
    kernel_evidence, kernel_advice = kernel_held_findings(loaded.resolver.cells,
                                                          replayed.allocated if outcome == "oom" else None)
    evidence = [*diagnosis.evidence, *(f"Tried on this script: {item.summary()}." for item in loaded.tried), *kernel_evidence]
    if attributed.site is not None:
        evidence.append(site_sentence(attributed.site, replayed.request, loaded.resolver))
    return Diagnosed(dataclasses.replace(diagnosis, confirm=plan, evidence=evidence), facts, kernel_advice)


def _run_facts(loaded: Loaded, replayed: Replayed, steps: Steps, attributed: Attributed) -> RunFacts:
    census, timeline, trace_facts = attributed.census, replayed.timeline, steps.facts
    backward = (backward_seen(replayed.replay) or bool(trace_facts and trace_facts.backward_on_python_thread)
                or main_thread_in_backward(census))
    mode = run_mode(backward, bool(trace_facts and trace_facts.optimizer), steps.model,
                    census.grad_enabled if census else None, census.inference_mode if census else None)
    return RunFacts(
        outcome=replayed.outcome, peak_allocated=timeline.peak_allocated, peak_reserved=timeline.peak_reserved,
        end_allocated=timeline.end_allocated, end_reserved=timeline.end_reserved, oom_count=replayed.oom_count,
        status=loaded.status, no_oom_sentence=no_oom_sentence(loaded.meta, loaded.status), steps=steps.model,
        growth=attributed.growth, mode=mode, grad_enabled=census.grad_enabled if census else None, census=census,
        storing=attributed.storing, sources=attributed.sources, cells=loaded.resolver.cells,
    )
