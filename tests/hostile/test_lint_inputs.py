"""`vramlens lint` on files that are not what they seem: FIFOs, devices, dangling links, huge files,
broken codings; `--fix` on thousands of findings; clean messages for every parse failure."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vramlens.lint import fix_source, lint_bytes, lint_file, lint_source
from vramlens.lint.engine import fixes as fixes_module
from vramlens.lint.parse.source import SOURCE_LIMIT, parse_failure

ROOT = Path(__file__).resolve().parents[2]
LEAKY = ("import torch\nimport torch.nn as nn\nmodel = nn.Linear(4, 4)\ncriterion = nn.MSELoss()\n"
         "def train(loader):\n    losses = []\n    for x, y in loader:\n        loss = criterion(model(x), y)\n"
         "        loss.backward()\n        losses.append(loss)\n    return len(losses)\n")


def lint_cli(*args, cwd, timeout=60):
    return subprocess.run([sys.executable, "-m", "vramlens", "lint", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, PYTHONPATH=str(ROOT / "server")))


def messages(findings):
    return [(f.code, f.message) for f in findings]


def test_a_fifo_named_on_the_command_line_is_reported_not_read(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    run = lint_cli("pipe.py", cwd=tmp_path, timeout=20)  # reading it would block forever
    assert "pipe.py:1:1: VL000" in run.stdout and "is a named pipe (FIFO), not a file" in run.stdout
    assert run.returncode == 1 and "Traceback" not in run.stderr


def test_a_fifo_and_a_dangling_link_in_a_folder_are_reported_and_the_rest_is_linted(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(LEAKY)
    os.mkfifo(project / "stream.py")
    (project / "gone.py").symlink_to(tmp_path / "deleted.py")
    run = lint_cli("--preview", "project", cwd=tmp_path, timeout=20)  # the leak is a preview check (VL102)
    assert run.returncode == 1, run.stderr
    assert "project/train.py:10:" in run.stdout and "VL102" in run.stdout  # linted all the same
    assert "stream.py:1:1: VL000" in run.stdout and "named pipe" in run.stdout
    assert "gone.py:1:1: VL000" in run.stdout and "symbolic link to" in run.stdout and "does not exist" in run.stdout
    assert "3 files checked" in run.stderr


def test_dev_zero_is_a_device_not_a_file(tmp_path):
    findings = lint_file("/dev/zero")  # was a MemoryError after 7.5 GB
    assert messages(findings) == [("VL000", "cannot check this file: /dev/zero is a character device, not a file.")]


def test_a_file_larger_than_the_limit_is_refused_before_reading(tmp_path):
    huge = tmp_path / "generated.py"
    with open(huge, "wb") as file:
        file.truncate(50 << 20)
    [finding] = lint_file(huge)
    assert finding.code == "VL000" and "is 50.0 MiB, more than the 10.0 MiB VRAM Lens reads as a source file" in finding.message
    [finding] = lint_source("x = 1\n" * (SOURCE_LIMIT // 6 + 1), "open-document.py")  # an editor's text, same limit
    assert finding.code == "VL000" and "vramlens lint checks" in finding.message


def test_fix_applies_thousands_of_fixes_with_a_few_parses(monkeypatch):
    source = "".join(LEAKY.replace("def train(", f"def train{i}(") for i in range(4000))
    parses = []
    real_parse = fixes_module.parse
    monkeypatch.setattr(fixes_module, "parse", lambda text: (parses.append(1), real_parse(text))[1])
    result = fix_source(source, preview=True)
    assert result.applied == 4000 and not result.remaining
    assert len(parses) <= 4, f"{len(parses)} parses for 4000 fixes"  # it was one per fix, then per round: 198 s


def test_fixes_that_break_the_file_together_are_found_by_halving(monkeypatch):
    from vramlens.lint.findings import Edit, Finding, Fix

    text = "a = 1\n" * 64
    good = [Fix("ok", (Edit(i + 1, 5, i + 1, 5, "0"),)) for i in range(64)]  # a = 10
    bad = Fix("bad", (Edit(10, 0, 10, 0, "("),))
    chosen = good[:9] + [bad] + good[9:]
    fixed, used = fixes_module._apply_what_parses(text, chosen)
    assert used == 64 and fixed == "a = 10\n" * 64


@pytest.mark.parametrize("cookie, said", [
    ("klingon", "declares the encoding `klingon`, which Python does not know"),
    ("rot13", "declares the encoding `rot13`, a codec that does not decode text"),  # was a LookupError traceback
    ("zlib_codec", "declares the encoding `zlib_codec`, a codec that does not decode text"),
    ("hex", "declares the encoding `hex`, a codec that does not decode text"),
])
def test_a_coding_cookie_python_cannot_use_is_one_clear_sentence(cookie, said):
    findings = lint_bytes(f"# -*- coding: {cookie} -*-\n".encode() + LEAKY.encode(), "odd.py")
    assert [f.code for f in findings] == ["VL000"]  # its text cannot be trusted: nothing else is checked
    assert said in findings[0].message and findings[0].message.endswith("nothing was checked.")
    assert findings[0].message.startswith("this file ") and "contains cannot" not in findings[0].message


@pytest.mark.parametrize("error, expected", [
    (SyntaxError("invalid syntax"), "cannot parse this file: invalid syntax; nothing else was checked."),
    (SyntaxError(""), "cannot parse this file: invalid syntax; nothing else was checked."),
    (MemoryError(), "cannot parse this file: parsing it needs more memory than there is; nothing was checked."),
    (RecursionError(), "cannot parse this file: it nests too deeply for Python's parser; nothing was checked."),
    (ValueError(), "cannot parse this file: ValueError; nothing else was checked."),
])
def test_every_parse_failure_reads_as_a_sentence(error, expected):
    message, line, column = parse_failure(error)
    assert message == expected and line == 1 and column == 0
    assert "(line None)" not in message and ": ;" not in message


def test_a_syntax_error_names_its_line():
    [finding] = lint_source("x = 1\ndef broken(:\n    pass\n")
    assert finding.message.startswith("cannot parse this file: ") and "at line 2" in finding.message
    assert finding.line == 2


def test_control_characters_in_file_names_never_reach_the_terminal(tmp_path):
    (tmp_path / "\x1b[2Jclear.py").write_text(LEAKY)
    (tmp_path / "two\nlines.py").write_text(LEAKY)
    run = lint_cli("--preview", ".", cwd=tmp_path)
    assert "\x1b" not in run.stdout and "\\x1b[2Jclear.py" in run.stdout
    assert "two\\nlines.py:10:" in run.stdout
    # Two findings, each with its "fix available" line: no name made a line of its own.
    assert len(run.stdout.splitlines()) == 4, run.stdout


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 and later parse these f-strings")
def test_an_f_string_only_a_newer_python_parses_says_which_parser_read_it():
    """PEP 701 f-strings (quotes of the same kind inside) are valid code on Python 3.12: the sentence says the
    checks ran on an older parser, not that the user's code is broken."""
    [finding] = lint_source('names = {"a": 1}\nprint(f"{names["a"]}")\n')
    assert finding.code == "VL000" and "at line 2" in finding.message
    assert "Python 3.12 and later accept such f-strings" in finding.message
    assert f"ran on Python {sys.version_info[0]}.{sys.version_info[1]}" in finding.message
    [broken] = lint_source("def broken(:\n    pass\n")
    assert "3.12" not in broken.message  # any other syntax error reads as before
