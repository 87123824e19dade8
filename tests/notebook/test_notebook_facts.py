"""Which cell a recorded execution was, from what the capture and the notebook file here say."""

import json

import nbformat
import pytest

from vramlens.analysis.load.notebook import read_notebook_facts
from vramlens.capture import CaptureError, load_capture


def notebook(path, *sources, ids=None):
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_markdown_cell("intro")] + [nbformat.v4.new_code_cell(s) for s in sources]
    for cell, identifier in zip(book.cells[1:], ids or []):
        cell["id"] = identifier
    nbformat.write(book, str(path))
    return str(path)


def facts(local, *runs, path="/elsewhere/nb.ipynb"):
    meta = {"notebook": {"path": path, "cells": [dict(code_name=f"/tmp/ipykernel_1/{n}.py", execution_count=n, **run)
                                                  for n, run in enumerate(runs, 1)]}}
    return read_notebook_facts(meta, lambda recorded: local)


def test_a_cell_is_placed_by_its_recorded_place_then_its_id_then_its_unique_source(tmp_path):
    local = notebook(tmp_path / "nb.ipynb", "a = 1", "b = 2", "b = 2", ids=["id-a", "id-b", "id-c"])
    found = facts(local, {"index": 5, "source": "x"}, {"cell_id": "id-c", "source": "b = 2"},
                  {"source": "a = 1"}, {"source": "b = 2"}, {"source": "not in the file"})
    assert [run.index for run in found.runs] == [5, 3, 1, None, None]  # two cells hold `b = 2`: not guessed
    assert found.ref("/tmp/ipykernel_1/3.py").label == "nb.ipynb cell 2"
    assert found.place("/tmp/ipykernel_1/4.py", 7) == "nb.ipynb In [4] line 7"


def test_without_the_notebook_here_only_recorded_places_count(tmp_path):
    found = facts(None, {"source": "a = 1"}, {"index": 2, "source": "b"})
    assert [run.index for run in found.runs] == [None, 2]
    assert found.ref("/tmp/ipykernel_1/2.py").notebook is None


def test_a_damaged_notebook_section_is_one_sentence(tmp_path):
    folder = tmp_path / "cap"
    folder.mkdir()
    for section, words in (("cells", "is not an object"), ({"cells": {"a": 1}}, "in a shape no vramlens writes"),
                           ({"cells": [{"source": 3}]}, "whose source is not text")):
        (folder / "capture.json").write_text(json.dumps({"format": "vramlens-capture", "version": 1, "snapshot": None,
                                                         "notebook": section}))
        with pytest.raises(CaptureError, match=words):
            load_capture(folder)


def test_a_vscode_cell_uri_as_a_file_name_is_cell_code_without_a_guessed_place(tmp_path):
    found = facts(None, {"source": "a = 1"})
    uri = "vscode-notebook-cell:/ws/train.ipynb#W3sZmlsZQ%3D%3D"
    assert found.is_cell(uri)
    ref = found.ref(uri)
    assert (ref.label, ref.index) == ("train.ipynb (a cell)", None)
