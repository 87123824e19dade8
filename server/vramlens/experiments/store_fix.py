"""The storing line's fix as one edit of one line: the same choice (analysis/recommendations/store_edit.py)
and the same proof of safety (lint/engine/store_fixes.py) on the file as it is here, for the three places
that use it: `vramlens analyze` prints it as a diff under the line to change, the confirming experiment
runs the program with it (agent/source_edit.py) to measure it, and the advice puts it first once measured."""

from __future__ import annotations

import os
from dataclasses import dataclass

from vramlens.analysis.experiments.variants import SourceEdit
from vramlens.analysis.model import Analysis
from vramlens.analysis.recommendations.store_edit import store_edit
from vramlens.regular_files import FileProblem, read_text_file


@dataclass(frozen=True)
class ProvenEdit:
    edit: SourceEdit  # the whole line before and after, in the file on this machine
    method: str  # "detach" | "detach_cpu" | "item"
    why: str  # what it frees, from the census


def proven_store_edit(analysis: Analysis) -> ProvenEdit | None:
    """The first of the census' chosen edits that the storing line's file proves safe; None when none is."""
    choice = store_edit(analysis.diagnosis.cause, analysis.storing, analysis.holders)
    storing = analysis.storing[0] if choice is not None else None
    if storing is None or not storing.local_path or storing.cell is not None:
        return None
    # The lint engine only where there is an edit to prove: most analyses have none, and `analyze` starts faster.
    from vramlens.lint import apply_fix, store_fixes
    from vramlens.lint.parse.source import SOURCE_LIMIT

    try:  # a regular file only, bounded, as the editor reads it
        text = read_text_file(storing.local_path, SOURCE_LIMIT, "source file")
    except FileProblem:
        return None
    found = store_fixes(text, choice.line, choice.target, [option.method for option in choice.choices])
    fixed = apply_fix(text, found[0][1]) if found else None
    if fixed is None:
        return None
    before, after = text.split("\n")[choice.line - 1], fixed.split("\n")[choice.line - 1]
    if fixed.count("\n") != text.count("\n"):
        return None  # the edit inserts on the storing line only; anything else is not one line's edit
    why = next(option.why for option in choice.choices if option.method == found[0][0])
    return ProvenEdit(SourceEdit(os.path.abspath(storing.local_path), choice.line, before, after), found[0][0], why)
