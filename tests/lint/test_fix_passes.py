"""`vramlens lint --fix` lints a file once per fixing round and reuses the last lint as what remains."""

from __future__ import annotations

import pytest

from cases import POSITIVE_CASES, default_on_case, preview_needed
from vramlens.cli import main
from vramlens.lint.engine import fixes as fixing

LEAKY = default_on_case()  # a default-on check's case, whichever the gate leaves on
PREVIEW = ["--preview"] if preview_needed(LEAKY) else []  # none with a fix is on: every check runs
CLEAN = "import torch\n\n\ndef add(a, b):\n    return a + b\n"


@pytest.fixture
def lint_passes(monkeypatch):
    passes: list[str] = []
    real = fixing.lint_source

    def counted(text, *args, **kwargs):
        passes.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(fixing, "lint_source", counted)
    return passes


def test_a_file_with_nothing_to_fix_is_linted_once(tmp_path, lint_passes, capsys):
    (tmp_path / "clean.py").write_text(CLEAN)
    assert main(["lint", "--fix", str(tmp_path)]) == 0
    assert len(lint_passes) == 1


def test_a_fixed_file_is_linted_once_before_and_once_after_its_fixes(tmp_path, lint_passes, capsys):
    path = tmp_path / "train.py"
    path.write_text(LEAKY.source)
    main(["lint", *PREVIEW, "--fix", str(path)])
    assert "1 fix applied" in capsys.readouterr().out
    assert lint_passes == [LEAKY.source, path.read_text()]
