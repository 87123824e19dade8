"""Before and after a fix, the diff pairs each line of the user's code with itself: by its text when
the text is unchanged, by the place its neighbours moved to when the fix edited the line itself."""

from types import SimpleNamespace

from vramlens.analysis.compare.diff import diff_text, _line_deltas
from vramlens.analysis.model import LineStat

MIB = 1 << 20


def line(number: int, source: str, live: int, growth: int = 0) -> LineStat:
    return LineStat(path="/job/eval.py", line=number, function="main", live_bytes=live, share=0.0,
                    allocated_bytes=live, count=1, growing=bool(growth), growth_bytes=growth, source=source)


def run(*lines: LineStat):
    return SimpleNamespace(lines=list(lines), storing=[])


def test_a_line_whose_text_the_fix_changed_is_paired_with_itself_even_after_an_edit_above_moved_it():
    before = run(line(30, "logits = model(tokens).logits", 80 * MIB),
                 line(32, "all_logits.append(logits)", 900 * MIB, growth=850 * MIB))
    # the fix: a comment inserted above (every line one lower) and the storing line edited
    after = run(line(31, "logits = model(tokens).logits", 80 * MIB),
                line(33, "all_logits.append(logits.argmax(-1).cpu())", 2 * MIB))
    deltas = _line_deltas(before, after)
    assert len(deltas) == 1, [(d.label, d.before, d.after) for d in deltas]  # the forward line did not change
    edited = deltas[0]
    assert (edited.line, edited.before, edited.after) == (33, 900 * MIB, 2 * MIB)
    assert edited.growth_before == 850 * MIB and edited.growth_after == 0
    assert edited.edited_from == "all_logits.append(logits)"


def test_a_line_that_is_gone_and_one_that_is_new_elsewhere_stay_two_lines():
    before = run(line(30, "logits = model(tokens).logits", 80 * MIB), line(32, "kept.append(logits)", 500 * MIB))
    after = run(line(30, "logits = model(tokens).logits", 80 * MIB), line(40, "cache[step] = logits", 300 * MIB))
    deltas = {d.line: d for d in _line_deltas(before, after)}
    assert deltas[32].after == 0 and deltas[32].edited_from is None
    assert deltas[40].before == 0 and deltas[40].after == 300 * MIB


def test_the_diff_text_shows_what_the_line_read_before():
    before = run(line(32, "all_logits.append(logits)", 900 * MIB, growth=850 * MIB))
    after = run(line(32, "all_logits.append(logits.cpu())", 0))
    item = _line_deltas(before, after)[0]
    side = SimpleNamespace(outcome="completed", cause="no_problem", peak_allocated=MIB, peak_reserved=MIB,
                           peak_driver=None, steps=None, completed=None, growth=None)
    text = diff_text(SimpleNamespace(before=side, after=side, lines=[item], holders=[], sentence="", notes=[]),
                     "a", "b")
    assert "was > all_logits.append(logits)" in text and "> all_logits.append(logits.cpu())" in text


def test_a_line_found_only_from_a_file_the_other_capture_could_not_read_is_left_out_not_shown_as_zero():
    unread = LineStat(path="/elsewhere/eval.py", line=30, function="main", live_bytes=80 * MIB, share=0.0,
                      allocated_bytes=80 * MIB, count=1, growing=False, source=None)
    stored = SimpleNamespace(path="/job/eval.py", line=32, label="eval.py:32", source="kept.append(logits)",
                             bytes=900 * MIB, growth_bytes=850 * MIB)
    before = SimpleNamespace(lines=[unread], storing=[])  # recorded elsewhere: no text, so no storing line
    after = SimpleNamespace(lines=[line(30, "logits = model(tokens).logits", 80 * MIB)], storing=[stored])
    notes: list[str] = []
    assert _line_deltas(before, after, notes) == []
    assert "eval.py:32" in notes[0] and "could not be read" in notes[0]


def test_holders_are_compared_only_when_both_captures_hold_a_census():
    from vramlens.analysis.compare.diff import _holder_deltas

    holder = SimpleNamespace(root="__main__.kept", bytes=900 * MIB, graph_bytes=0, survivor_bytes=850 * MIB)
    with_census = SimpleNamespace(census_moment="oom", holders=[holder])
    without = SimpleNamespace(census_moment=None, holders=[])
    notes: list[str] = []
    assert _holder_deltas(with_census, without, notes) == []
    assert "after capture has no tensor census" in notes[0]
    emptied = SimpleNamespace(census_moment="oom", holders=[])
    assert [(d.label, d.before, d.after) for d in _holder_deltas(with_census, emptied)] == [("__main__.kept", 900 * MIB, 0)]
