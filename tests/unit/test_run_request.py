"""A diagnose request and the folder's settings become the runner's options; the request wins."""

import sys

import pytest

from vramlens.lsp.run_request import run_options
from vramlens.lsp.settings import parse_settings


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("print('hi')\n")
    return path


def test_settings_fill_what_the_request_leaves_out(tmp_path, script):
    settings = parse_settings({"interpreter": "/opt/py/bin/python", "args": ["--epochs", "1"], "env": {"A": "1"},
                               "memoryLimit": "24GiB", "timeoutSeconds": 30, "stacks": "all"})
    options = run_options({"uri": "ignored"}, settings, script, tmp_path)
    assert options.python == "/opt/py/bin/python" and options.args == ["--epochs", "1"]
    assert options.memory_limit_bytes == 24 * 2**30 and options.memory_limit_text == "24GiB"
    assert options.timeout_s == 30 and options.stacks == "all" and options.extra_env == {"A": "1"}
    assert options.cwd == tmp_path and options.source_root == tmp_path
    assert options.capture_dir.parent == tmp_path / ".vramlens" / "captures"
    assert options.capture_dir.name.startswith("train-")


def test_the_request_overrides_the_settings(tmp_path, script):
    settings = parse_settings({"args": ["--a"], "env": {"A": "1", "B": "1"}, "memoryLimit": "24GiB"})
    request = {"args": [], "env": {"B": "2"}, "memoryLimit": "0.5", "interpreter": sys.executable,
               "cwd": str(tmp_path), "timeoutSeconds": 5, "stacks": "python"}
    options = run_options(request, settings, script, None)
    assert options.args == [] and options.extra_env == {"A": "1", "B": "2"}
    assert options.memory_limit_fraction == 0.5 and options.memory_limit_bytes is None
    assert options.python == sys.executable and options.timeout_s == 5


@pytest.mark.parametrize("request_, sentence", [
    ({"memoryLimit": "lots"}, "The memory limit 'lots' cannot be used \\(not a size"),
    ({"cwd": "/no/such/folder"}, "The working folder /no/such/folder does not exist"),
])
def test_unusable_values_are_one_sentence(tmp_path, script, request_, sentence):
    with pytest.raises(ValueError, match="^" + sentence):
        run_options(request_, parse_settings({}), script, tmp_path)


def test_an_unsaved_file_cannot_run(tmp_path):
    with pytest.raises(ValueError, match="save it first"):
        run_options({}, parse_settings({}), tmp_path / "untitled.py", tmp_path)
