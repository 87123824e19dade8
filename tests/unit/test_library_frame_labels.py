"""A library frame's label ("Class.method", else the function's name) is the same whether the file is
parsed or the frame lies above every line where a class may begin (then the file is not parsed)."""

import pytest

from vramlens.analysis.attribution import library_tree

SOURCES = {
    "plain": (
        'def dropout(x):\n    return x\n\n\n'
        'def pad(x):\n    """Example:\n\n    class MyModel(nn.Module):\n        def forward(self, x):\n'
        '            return pad(x)\n    """\n    return x\n\n\n'
        'def later(x):\n    def inner():\n        return x\n    return inner()\n'
    ),
    "classes": (
        'import os\n\n\ndef helper(x):\n    return x\n\n\n'
        '@decorate\nclass Linear(Module):\n    def forward(self, x):\n        return helper(x)\n\n'
        '    class Nested:\n        def forward(self):\n            def inner():\n                return 1\n            return inner()\n\n\n'
        'def after(x):\n    return x\n'
    ),
    "carriage_returns": 'def first(x):\r    return x\r\r\rclass\\\r  Late:\r    def first(self):\r        return 2\r',
    "crlf_and_bom": '\ufeffdef first(x):\r\n    return x\r\n\r\nclass\tLate:\r\n    def first(self):\r\n        return 2\r\n',
    "latin1_cookie": "# -*- coding: latin-1 -*-\ndef caf\u00e9(x):\n    return '\u00e9'\n\nclass K:\n    def caf\u00e9(self):\n        return 1\n",
    "no_class": 'def one():\n    return 1\n\n\ndef two():\n    """class is a word here."""\n    return 2\n',
}
ENCODINGS = {"latin1_cookie": "latin-1"}


def _library_file(tmp_path, name: str) -> str:
    folder = tmp_path / "lib" / "python3.11" / "site-packages" / "pkg"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_bytes(SOURCES[name].encode(ENCODINGS.get(name, "utf-8")))
    return str(path)


def _names(source: str) -> set[str]:
    words = source.replace("(", " ").replace(":", " ").split()
    return {word for before, word in zip(words, words[1:]) if before == "def"} | {"absent"}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_label_is_the_parsed_files_on_every_line(tmp_path, monkeypatch, name):
    path = _library_file(tmp_path, name)
    lines = SOURCES[name].replace("\r\n", "\n").replace("\r", "\n").count("\n") + 2
    first_class = library_tree._first_class_line(path)
    frames = [{"filename": path, "line": line, "name": function}
              for line in range(lines) for function in sorted(_names(SOURCES[name]))]
    fast = [library_tree.frame_label(frame) for frame in frames]
    monkeypatch.setattr(library_tree, "_first_class_line", lambda path: library_tree._UNKNOWN)
    parsed = [library_tree.frame_label(frame) for frame in frames]
    assert fast == parsed
    assert any(frame["line"] < first_class for frame in frames)  # the bound was used on some lines


def test_the_bound_is_the_first_line_that_may_begin_a_class(tmp_path):
    bounds = {name: library_tree._first_class_line(_library_file(tmp_path, name)) for name in SOURCES}
    assert bounds["plain"] == 8  # the docstring's example: the bound is an upper bound, never past a class
    assert bounds["classes"] == 9
    assert bounds["carriage_returns"] == 5 and bounds["crlf_and_bom"] == 4
    assert bounds["latin1_cookie"] == 5
    assert bounds["no_class"] > 10**9


def test_a_method_below_a_class_is_named_by_its_class(tmp_path):
    path = _library_file(tmp_path, "classes")
    assert library_tree.frame_label({"filename": path, "line": 11, "name": "forward"}) == "Linear.forward"
    assert library_tree.frame_label({"filename": path, "line": 5, "name": "helper"}) == "helper"
    assert library_tree.frame_label({"filename": path, "line": 16, "name": "inner"}) == "Nested.inner"
