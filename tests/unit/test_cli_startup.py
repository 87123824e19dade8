"""A subcommand starts with its own modules only; the top level still lists and checks every subcommand."""

import os
import subprocess
import sys

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "captures", "no_problem")
# A recorded OOM whose user files are not here: the storing line is looked for, and nothing is parsed.
AWAY_FROM_SOURCES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "realworld", "hf_generate_kv_cache", "capture")
PROBE = """
import contextlib, io, sys
from vramlens.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
print(code, 'vramlens.lint' in sys.modules, 'vramlens.runner' in sys.modules)
"""


def probe(*args):
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_analyze_does_not_import_lint_or_the_runner():
    assert probe("analyze", FIXTURE) == ["0", "False", "False"]


def test_lint_gets_its_engine(tmp_path):
    source = tmp_path / "train.py"
    source.write_text("x = 1\n")
    assert probe("lint", str(source))[1] == "True"


def test_the_top_level_and_an_unknown_word_still_list_every_subcommand():
    listed = subprocess.run([sys.executable, "-m", "vramlens", "--help"], capture_output=True, text=True)
    unknown = subprocess.run([sys.executable, "-m", "vramlens", "bogus"], capture_output=True, text=True)
    assert unknown.returncode == 2
    for name in ("run", "experiment", "analyze", "report", "lint"):
        assert name in listed.stdout
        assert f"'{name}'" in unknown.stderr


def test_analyze_away_from_the_sources_imports_neither_the_history_nor_the_source_facts():
    """The per-line history is the editor's, the store facts need a user file: neither costs `analyze` its start-up."""
    code = PROBE.replace("'vramlens.lint' in sys.modules, 'vramlens.runner' in sys.modules",
                         "'vramlens.analysis.attribution.over_time' in sys.modules, "
                         "'vramlens.analysis.attribution.store_facts' in sys.modules")
    for capture in (FIXTURE, AWAY_FROM_SOURCES):
        done = subprocess.run([sys.executable, "-c", code, "analyze", capture], capture_output=True, text=True, check=True)
        assert done.stdout.split() == ["0", "False", "False"], capture
