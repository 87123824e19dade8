"""Bad input never crashes the linter: one clear VL000 finding instead of a traceback."""

from __future__ import annotations

import time

from cases import POSITIVE_CASES, default_on_case, preview_needed
from vramlens.lint import fix_source, lint_bytes, lint_file, lint_source

LEAKY = default_on_case()  # a default-on check's case, whichever the gate leaves on
PREVIEW = preview_needed(LEAKY)  # none with a fix is on: every check runs


def test_syntax_error_gives_one_parse_error_finding():
    findings = lint_source("def broken(:\n    pass\n", "bad.py")
    assert len(findings) == 1
    finding = findings[0]
    assert (finding.code, finding.rule, finding.severity) == ("VL000", "parse-error", "error")
    assert finding.line == 1 and "cannot parse" in finding.message


def test_parse_error_is_reported_even_when_selecting_other_rules():
    assert [f.code for f in lint_source("x = (", select=["retained-graph"])] == ["VL000"]


def test_fix_leaves_unparsable_source_alone():
    assert fix_source("def broken(:\n").text == "def broken(:\n"


def test_latin1_with_coding_cookie():
    data = b"# -*- coding: latin-1 -*-\n# \xe9t\xe9\n" + LEAKY.source.encode()
    assert [f.code for f in lint_bytes(data, "latin.py", preview=PREVIEW)] == [LEAKY.code]


def test_utf8_bom():
    assert [f.code for f in lint_bytes(b"\xef\xbb\xbf" + LEAKY.source.encode(), "bom.py", preview=PREVIEW)] == [LEAKY.code]


def test_undecodable_bytes_are_reported_and_the_rest_is_checked():
    codes = [f.code for f in lint_bytes(LEAKY.source.encode() + b"# \xff\n", "odd.py", preview=PREVIEW)]
    assert codes == ["VL000", LEAKY.code]


def test_unknown_coding_cookie():
    findings = lint_bytes(b"# -*- coding: klingon -*-\nx = 1\n", "odd.py")
    assert [f.code for f in findings] == ["VL000"]


def test_a_custom_codec_cookie_gives_one_clear_finding_and_nothing_else_is_checked():
    data = b"# -*- coding: future_fstrings -*-\n" + LEAKY.source.encode()
    findings = lint_bytes(data, "fs.py")
    assert [f.code for f in findings] == ["VL000"]
    message = findings[0].message
    assert "`future_fstrings`" in message and "nothing was checked" in message and "contains cannot" not in message


def test_null_bytes_and_unreadable_paths(tmp_path):
    assert [f.code for f in lint_bytes(b"x = 1\x00\n", "nul.py")] == ["VL000"]
    assert [f.code for f in lint_file(tmp_path / "missing.py")] == ["VL000"]


def test_cell_scripts_are_checked_like_any_script():
    source = "# %%\nimport torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 2)\n# %%\nkeep = []\nfor x in loader:\n    keep.append(model(x))\n# %% [markdown]\n# notes\n"
    assert [(f.line, f.code) for f in lint_source(source, preview=True)] == [(8, "VL102")]


def test_deep_nesting_does_not_crash():
    source = "x = " + "(" * 300 + "1" + ")" * 300 + "\n"
    findings = lint_source(source)
    assert all(f.code == "VL000" for f in findings)
    deep = "".join("    " * i + f"for i{i} in loader:\n" for i in range(60)) + "    " * 60 + "keep.append(model(x))\n"
    lint_source("keep = []\n" + deep)


def test_huge_file_is_linted_quickly():
    source = LEAKY.source + "\n".join(f"value_{i} = {i} * 2" for i in range(50_000)) + "\n"
    start = time.perf_counter()
    findings = lint_source(source, preview=PREVIEW)
    assert [f.code for f in findings] == [LEAKY.code]
    assert time.perf_counter() - start < 10
