"""One line's figure, blocks, path and holder, as every view shows them, on captures recorded on the H200."""

from __future__ import annotations

from pathlib import Path

import pytest

from vramlens.analysis import analyze_path
from vramlens.analysis.rendering.line_view import line_views
from vramlens.analysis.rendering.verdict_view import verdict_view
from vramlens.analysis.rendering.analysis_text import render_text
from vramlens.lsp.annotations import line_annotations

REPO = Path(__file__).resolve().parents[2]
REALWORLD = REPO / "tests" / "fixtures" / "realworld"
MIB = 1024 * 1024
FIRST_SCREEN = 15


def _analysis(name: str, source: str | None = None):
    return analyze_path(REALWORLD / name / "capture", source_root=str(REPO / "workloads" / source) if source else None)


def test_the_hover_describes_the_live_blocks_their_stack_and_their_holder():
    analysis = _analysis("lightning_val_outputs", "lightning_fit")
    top = analysis.lines[0]
    view = line_views(analysis)[id(top)]
    # The 23 kept validation outputs of 125 MiB: not the run's most common size, nor the first allocation's path.
    assert view.blocks.startswith("26 blocks live: 125.00 MiB ×23")
    assert view.path[-1].endswith("linear.py:134 forward") and view.path_title == "largest live stack"
    assert not any("embedding" in frame for frame in view.path)
    assert "embedding" in top.call_path[-1]  # what the old hover showed: the line's first allocation
    assert view.held_by.startswith("held by model.val_outputs (a list of 23, 2.82 GiB)")
    hover = next(a for a in line_annotations(analysis)[top.local_path] if a.line == top.line).hover
    assert "125.00 MiB ×23" in hover and "Held by model.val\\_outputs (a list of 23" in hover
    assert "`linear.py:134` `forward`" in hover and "embedding" not in hover


def test_a_holder_of_a_sliver_of_a_line_is_not_named_as_its_holder():
    analysis = _analysis("lightning_val_outputs")
    main = next(line for line in analysis.lines if line.line == 82)  # 206 MiB, of which a local holds 8.5 KiB
    assert line_views(analysis)[id(main)].held_by is None


@pytest.mark.parametrize("name", sorted(path.name for path in REALWORLD.iterdir() if (path / "capture").is_dir()))
def test_the_first_screen_answers_and_every_view_shows_one_figure(name):
    try:
        analysis = _analysis(name)
    except Exception as error:  # a capture with nothing recorded says so in one sentence elsewhere
        pytest.skip(f"not analyzable: {error}")
    text = render_text(analysis, "capture")
    first = text.splitlines()[:FIRST_SCREEN]
    verdict = verdict_view(analysis)
    assert first[2].startswith(f"Cause: {verdict.cause} ({analysis.diagnosis.cause}")
    if verdict.line is not None:
        assert any(row.startswith(f"Line to change: {verdict.line.place}") for row in first)
    if verdict.fix is not None:
        assert f"First fix: {verdict.fix.action}" in first
    # A confident verdict carries no either-or question among its suggestions.
    if not analysis.diagnosis.alternative and analysis.diagnosis.confidence >= 0.75:
        assert not any("?" in rec.action for rec in analysis.recommendations), analysis.recommendations
    actions = [rec.action for rec in analysis.recommendations]
    assert len(actions) == len(set(actions))
    assert sum("activation checkpointing" in action for action in actions) <= 1
    # The figure of each line in the Top lines is the view's (the hint and the hover render the same view).
    views = line_views(analysis)
    for line in [line for line in analysis.lines if line.live_bytes][:3]:
        assert views[id(line)].figure_words in text
    assert "(s)" not in text
