"""The moment an analysis is about is worded from one table (load/ending.py): a line's figure, its
headline, the per-line table's column and the accounting's title say the same moment."""

from pathlib import Path

import pytest

from vramlens.analysis import analyze_path
from vramlens.analysis.load.ending import moment_short, moment_words
from vramlens.analysis.rendering.accounting_view import accounting_view
from vramlens.analysis.rendering.line_view import line_views
from vramlens.lsp.report_payload import line_columns

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "captures"


@pytest.mark.parametrize("name, moment", [("retained_references", "oom"), ("no_problem", "peak")])
def test_every_view_of_a_line_says_the_same_moment(name, moment):
    analysis = analyze_path(str(CAPTURES / name))
    assert analysis.accounting.moment == moment
    short = moment_short(moment)
    view = line_views(analysis)[id(analysis.lines[0])]
    assert f"% {short}" in view.figure_words and f"live {short} ·" in view.headline
    assert line_columns(analysis)[0]["label"] == f"live {short}"
    assert accounting_view(analysis).title == f"Memory {moment_words(moment, analysis.status)}"


def test_a_snapshot_taken_while_the_run_went_on_names_its_moment():
    assert moment_words("end", "on_demand") == "at the moment the snapshot was taken"
    assert moment_words("oom", "on_demand") == "at the OOM"
    assert (moment_words("peak", None), moment_short("peak"), moment_short("end")) == (
        "at the allocated peak", "at the peak", "at the end")
