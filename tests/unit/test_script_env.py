"""The user's script does not inherit the language server's own library folder on PYTHONPATH."""

import os
import subprocess
import sys
from pathlib import Path

from vramlens.runner.script_env import OWN_LIBRARY_FOLDER, script_environment


def test_our_library_folder_leaves_an_inherited_pythonpath_and_the_users_entries_stay():
    base = {"PYTHONPATH": os.pathsep.join([str(OWN_LIBRARY_FOLDER), "/home/me/src"]), "HOME": "/home/me"}
    env = script_environment({}, base)
    assert env["PYTHONPATH"] == "/home/me/src" and env["HOME"] == "/home/me"


def test_pythonpath_that_held_only_our_folder_is_removed():
    env = script_environment({}, {"PYTHONPATH": str(OWN_LIBRARY_FOLDER) + os.sep})
    assert "PYTHONPATH" not in env


def test_a_pythonpath_the_user_sets_for_the_script_is_passed_as_given():
    explicit = os.pathsep.join([str(OWN_LIBRARY_FOLDER), "/x"])
    env = script_environment({"PYTHONPATH": explicit}, {"PYTHONPATH": "/inherited"})
    assert env["PYTHONPATH"] == explicit


def test_the_script_run_by_the_runner_sees_the_filtered_pythonpath(tmp_path):
    """Through the real runner and agent (stand-in torch), started as the editor starts the server."""
    root = Path(__file__).resolve().parents[2]
    double = root / "tests" / "agent_double"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "server"), str(double)]))
    (tmp_path / "probe.py").write_text("import os\nprint('PYTHONPATH=' + os.environ.get('PYTHONPATH', ''))\n")
    run = subprocess.run([sys.executable, "-m", "vramlens", "run", "-o", str(tmp_path / "cap"), "probe.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert f"PYTHONPATH={double}" in run.stdout.splitlines()
