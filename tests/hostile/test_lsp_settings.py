"""Settings and requests of the language server checked against sane ranges, with one clear sentence:
`processesPerNode: 10**12` would have started torchrun with that many processes."""

from pathlib import Path

import pytest

from vramlens.lsp.run_request import processes_per_node, run_options
from vramlens.lsp.settings import MAX_PROCESSES_PER_NODE, parse_settings


@pytest.mark.parametrize("value", [10**12, -1, 65, 2.5, "8", True, [2], 1e400])
def test_processes_per_node_outside_its_range_is_refused_with_a_sentence(value):
    settings = parse_settings({"processesPerNode": value})
    assert settings.processes_per_node == 0  # never used
    with pytest.raises(ValueError, match=f"vramlens.processesPerNode must be a whole number from 0 to {MAX_PROCESSES_PER_NODE}"):
        processes_per_node({}, settings)
    with pytest.raises(ValueError, match=f"processesPerNode must be a whole number from 0 to {MAX_PROCESSES_PER_NODE}"):
        processes_per_node({"processesPerNode": value}, parse_settings({}))


def test_processes_per_node_within_its_range_is_used():
    assert processes_per_node({}, parse_settings({"processesPerNode": 4})) == 4
    assert processes_per_node({"processesPerNode": 2}, parse_settings({"processesPerNode": 4})) == 2


@pytest.mark.parametrize("raw, problem", [
    ({"experimentRepeats": 10**9}, "experimentRepeats"),
    ({"timeoutSeconds": 1e400}, "timeoutSeconds"),
    ({"timeoutSeconds": 10**400}, "timeoutSeconds"),
    ({"timeoutSeconds": -3}, "timeoutSeconds"),
])
def test_numbers_no_run_can_use_fall_back_and_are_named(raw, problem):
    settings = parse_settings(raw)  # never raises, whatever the client sent
    assert problem in settings.problems and settings.problems[problem].startswith(f"vramlens.{problem} must be")


def test_a_timeout_setting_out_of_range_refuses_the_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    with pytest.raises(ValueError, match="vramlens.timeoutSeconds must be"):
        run_options({}, parse_settings({"timeoutSeconds": 1e400}), script, tmp_path)
    with pytest.raises(ValueError, match="timeoutSeconds must be"):
        run_options({"timeoutSeconds": 10**400}, parse_settings({}), script, tmp_path)
