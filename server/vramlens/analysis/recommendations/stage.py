"""The recommendations stage: what to try, fitted to the cause; a notebook's own trap first."""

from __future__ import annotations

from vramlens.analysis.accounting.stage import Accounted
from vramlens.analysis.attribution.stage import Attributed
from vramlens.analysis.diagnosis.stage import Diagnosed
from vramlens.analysis.load.stage import Loaded
from vramlens.analysis.model import Recommendation
from vramlens.analysis.recommendations.advice import recommend as advise


def recommend(loaded: Loaded, accounted: Accounted, attributed: Attributed, diagnosed: Diagnosed) -> list[Recommendation]:
    return diagnosed.kernel_advice + advise(diagnosed.diagnosis, accounted.accounting, attributed.lines, loaded.settings,
                                            loaded.expandable_on, loaded.tried, meta=loaded.meta, facts=diagnosed.facts)
