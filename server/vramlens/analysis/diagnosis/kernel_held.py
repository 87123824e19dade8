"""A notebook's own trap: memory the kernel kept alive (an earlier failure's traceback, old outputs
with their autograd graphs) counted in what ran out. Evidence and the first thing to try, from what
the kernel held at the failing allocation itself; the cause stays the classifier's."""

from __future__ import annotations

from vramlens.analysis.model import NotebookFacts
from vramlens.analysis.model import Recommendation
from vramlens.units import format_bytes as fmt

NOTABLE_SHARE = 0.05  # of allocated at the OOM: below this the kernel's own references are not the story


def kernel_held_findings(facts: NotebookFacts | None, allocated: int | None) -> tuple[list[str], list[Recommendation]]:
    if facts is None or not facts.holders_at_oom or not allocated:
        return [], []
    freeable = [h for h in facts.holders_at_oom if (h.exclusive_bytes or 0) > 0]
    total = sum(h.exclusive_bytes for h in freeable)
    if total < NOTABLE_SHARE * allocated:
        return [], []
    named = ", ".join(f"{h.root} ({fmt(h.exclusive_bytes)})" for h in freeable[:3])
    evidence = [f"At the OOM the kernel itself kept {fmt(total)} ({total / allocated:.0%} of allocated) alive that "
                f"nothing in the notebook's variables holds: {named}."]
    commands = "; ".join(dict.fromkeys(h.free for h in freeable))
    action = f"Free what the kernel keeps before running the cell again: {commands}."
    reason = (f"{fmt(total)} of the memory that ran out was held only by IPython's own references (kept outputs or an "
              "earlier failure's traceback), not by the cell that failed.")
    return evidence, [Recommendation(action=action, reason=reason, command=commands)]
