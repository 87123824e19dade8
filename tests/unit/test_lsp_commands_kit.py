"""The command kit's argument parsing (LSP names, JSON values as sent) and the hover's records, worked
out once per version of a document."""

from __future__ import annotations

import pytest
from pygls.workspace import TextDocument

from vramlens.lsp.annotations import LineAnnotation
from vramlens.lsp.capture_commands import LiveAtArguments, OpenCaptureArguments, PATH_NEEDED
from vramlens.lsp.placements import Placement
from vramlens.lsp.capture_store import FileFigures
from vramlens.lsp.commands import Refused, parse
from vramlens.lsp.runs import RunTarget


def test_arguments_are_read_under_their_lsp_names():
    args = parse(({"path": "/c", "workspaceFolder": "file:///w", "totalMemory": "80GiB", "sourceRoot": "/s"},),
                 OpenCaptureArguments)
    assert (args.path, args.workspace_folder, args.total_memory, args.source_root) == ("/c", "file:///w", "80GiB", "/s")
    assert parse((), OpenCaptureArguments) == OpenCaptureArguments()  # nothing sent: every default
    assert parse(("not an object",), LiveAtArguments).index is None


@pytest.mark.parametrize("index", ["3", True, 2.0, [1]])
def test_a_value_of_another_json_type_is_refused_with_the_fields_sentence(index):
    with pytest.raises(Refused, match="`index` \\(a whole number\\)"):
        parse(({"index": index},), LiveAtArguments)
    with pytest.raises(Refused) as refused:
        parse(({"path": 12},), OpenCaptureArguments)
    assert str(refused.value) == PATH_NEEDED


def test_a_field_without_a_refusal_of_the_wrong_type_counts_as_not_given():
    assert parse(({"uri": 3, "trusted": "yes"},), RunTarget) == RunTarget(None, False)
    assert parse(({"uri": "file:///t.py", "trusted": 1, "args": ["--x"]},), RunTarget) == RunTarget("file:///t.py", False)
    assert parse(({"uri": "file:///t.py", "trusted": True},), RunTarget) == RunTarget("file:///t.py", True)


class _Links:
    """What Placement.records asks of the whole-path lookup: shown or not, and nothing to add."""

    shown = False

    def of(self, figures):
        return lambda annotation: ("", "")


def test_the_records_are_worked_out_once_per_version_of_the_document():
    annotation = LineAnnotation("/w/t.py", 2, "y = f(x)", "1.00 GiB", "1.00 GiB live", 0.5, 1 << 30, False, 0,
                                "**1.00 GiB live**", "f")
    figures = FileFigures("/w/t.py", {2: annotation}, lines=["x = 1\n", "y = f(x)\n"])
    placement = Placement(figures, TextDocument("file:///w/t.py", "x = 1\ny = f(x)\n", version=1))
    links = _Links()
    first, by_line = placement.records(1, "[Show in report](command:x)", links)
    assert by_line[1]["hover"] == "**1.00 GiB live**\n\n[Show in report](command:x)" and first == [by_line[1]]
    assert placement.records(1, "[Show in report](command:x)", links)[0] is first  # a second hover reuses them
    again = placement.records(2, "[Show in report](command:x)", links)[0]
    assert again is not first  # a new version: afresh
    placement.moved()  # an edit reached the line tracker
    assert placement.records(2, "[Show in report](command:x)", links)[0] is not again
