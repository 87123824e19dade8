"""Recorded lines followed through edits: moved with insertions and deletions, stale when changed."""

from vramlens.lsp.line_tracking import LineTracker

TEXT = ["import torch", "", "def step(x):", "    y = x * 2", "    keep.append(y)", "    return y"]
RECORDED = {3: "y = x * 2", 4: "keep.append(y)"}


def tracker() -> LineTracker:
    return LineTracker(dict(RECORDED), TEXT, TEXT)


def where(t: LineTracker) -> dict[int, tuple[int, bool]]:
    return {a.recorded: (a.current, a.stale) for a in t.positions()}


def test_enter_at_the_start_of_a_line_moves_it_down():
    t = tracker()
    t.apply_change((3, 0), (3, 0), "\n")
    assert where(t) == {3: (4, False), 4: (5, False)}


def test_enter_at_the_end_of_a_line_keeps_it():
    t = tracker()
    t.apply_change((3, 13), (3, 13), "\n    ")
    assert where(t) == {3: (3, False), 4: (5, False)}


def test_deleting_a_line_above_moves_up_and_deleting_the_line_removes_it():
    t = tracker()
    t.apply_change((1, 0), (2, 0), "")
    assert where(t) == {3: (2, False), 4: (3, False)}
    t.apply_change((2, 0), (3, 0), "")
    assert where(t) == {4: (2, False)}


def test_typing_in_the_line_makes_it_stale_and_undo_restores_it():
    t = tracker()
    t.apply_change((3, 12), (3, 13), "3")
    assert where(t)[3] == (3, True)
    t.apply_change((3, 12), (3, 13), "2")
    assert where(t)[3] == (3, False)


def test_whole_text_replacement_follows_a_line_diff():
    t = tracker()
    t.replace_all(["# header", "# more"] + TEXT[:4] + ["    keep.append(y.detach())", TEXT[5]])
    assert where(t) == {3: (5, False), 4: (6, True)}


def test_document_differing_from_disk_at_open_is_matched():
    t = LineTracker(dict(RECORDED), TEXT, ["# new"] + TEXT)
    assert where(t) == {3: (4, False), 4: (5, False)}
