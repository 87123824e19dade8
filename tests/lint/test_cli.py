"""`vramlens lint`: exit codes, --json schema, --select/--ignore, --fix writing files."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from cases import POSITIVE_CASES, default_on_case, preview_needed
from vramlens.cli import main
from vramlens.lint import CHECKS

# A default-on check's case: the command line's behaviour does not depend on which check it is.
LEAKY = default_on_case()  # a default-on check's case, whichever the gate leaves on
PREVIEW = ["--preview"] if preview_needed(LEAKY) else []  # none with a fix is on: every check runs
RULE = next(c.rule for c in CHECKS if c.code == LEAKY.code)
CLEAN = "import torch\n\n\ndef add(a, b):\n    return a + b\n"
INFO_ONLY = next(c for c in POSITIVE_CASES if c.name == "empty_cache_every_step")


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(LEAKY.source)
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN)
    (tmp_path / "pkg" / "notes.txt").write_text("total += loss")
    return tmp_path


def run(*argv: str) -> int:
    return main(["lint", *PREVIEW, *argv])


def test_exit_code_is_1_with_warnings_and_0_when_clean(project):
    assert run(str(project / "pkg" / "train.py")) == 1
    assert run(str(project / "pkg" / "clean.py")) == 0


def test_info_findings_alone_do_not_fail(tmp_path, capsys):
    path = tmp_path / "info.py"
    path.write_text(INFO_ONLY.source)
    assert run("--select", "VL401", str(path)) == 0  # a preview check, selected by its code
    assert "VL401" in capsys.readouterr().out


def test_folder_is_walked_for_python_files(project, capsys):
    assert run(str(project)) == 1
    out = capsys.readouterr().out
    assert f"train.py:{LEAKY.line}:" in out and "notes.txt" not in out


def test_json_schema(project, capsys):
    run("--json", str(project))
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"findings"}
    finding = payload["findings"][0]
    assert set(finding) == {"path", "line", "column", "end_line", "end_column", "code", "rule", "severity", "message", "fixes"}
    assert finding["code"] == LEAKY.code and finding["rule"] == RULE and finding["severity"] == "warning"
    assert finding["line"] == LEAKY.line
    fix = finding["fixes"][0]
    assert set(fix) == {"title", "edits"}
    assert set(fix["edits"][0]) == {"line", "column", "end_line", "end_column", "new_text"}
    assert fix["edits"][0]["new_text"].strip() in LEAKY.fix[1]


def test_select_and_ignore(project, capsys):
    target = str(project / "pkg" / "train.py")
    other = "retained-graph" if RULE != "retained-graph" else "missing-no-grad"
    assert run("--select", other, target) == 0
    assert run("--select", LEAKY.code[:3], target) == 1
    assert run("--ignore", RULE, target) == 0
    assert run("--ignore", LEAKY.code, target) == 0
    assert run("--select", RULE, "--ignore", LEAKY.code, target) == 0
    capsys.readouterr()
    assert run("--select", "no-such-rule", target) == 2
    assert "unknown rule" in capsys.readouterr().err


def test_missing_path_is_a_usage_error(tmp_path, capsys):
    assert run(str(tmp_path / "absent.py")) == 2
    assert "no such file" in capsys.readouterr().err


def test_fix_writes_the_file_and_exit_reflects_what_remains(project):
    path = project / "pkg" / "train.py"
    assert run("--fix", str(path)) == 0
    assert path.read_text() == LEAKY.fixed
    assert run("--fix", str(path)) == 0
    assert path.read_text() == LEAKY.fixed
    ast.parse(path.read_text())


def test_fix_keeps_latin1_encoding_and_bom(tmp_path):
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + LEAKY.source.encode())
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + LEAKY.source.encode())
    run("--fix", str(latin), str(bom))
    fixed = LEAKY.fix[1].encode()
    assert b"caf\xe9" in latin.read_bytes() and fixed in latin.read_bytes()
    assert bom.read_bytes().startswith(b"\xef\xbb\xbf") and fixed in bom.read_bytes()


def test_fix_never_writes_a_file_it_could_not_decode(tmp_path):
    path = tmp_path / "broken.py"
    data = LEAKY.source.encode() + b"# \xff\xfe\n"
    path.write_bytes(data)
    run("--fix", str(path))
    assert path.read_bytes() == data


def test_console_entry_point(project):
    result = subprocess.run(
        [sys.executable, "-m", "vramlens", "lint", *PREVIEW, "--json", str(project / "pkg" / "train.py")],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 1
    assert json.loads(result.stdout)["findings"][0]["code"] == LEAKY.code


def test_files_linted_in_several_processes_give_what_one_process_gives(tmp_path, capsys):
    for i, case in enumerate(POSITIVE_CASES[:12]):
        (tmp_path / f"case_{i:02}.py").write_text(case.source, encoding="utf-8")
        (tmp_path / f"clean_{i:02}.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "broken.py").write_text("def f(:\n", encoding="utf-8")
    outputs = []
    for jobs in ("1", "3"):
        status = run("--json", "--preview", "--jobs", jobs, str(tmp_path))
        outputs.append((status, json.loads(capsys.readouterr().out)["findings"]))
    assert outputs[0] == outputs[1]
    assert len({f["path"] for f in outputs[0][1]}) >= 12  # every case file and the broken one reported, in order
