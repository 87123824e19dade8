"""Roles and holders from a census recorded by the real agent in a real process, with the stand-in
torch of tests/agent_double (its tensors are byte buffers on a pretend device; the census reads
them the way it reads real ones). Real models, optimizers and caches are proven on GPU captures
(tests/test_realworld_captures.py)."""

import json

from test_run_process import vramlens, write

KEEP = (
    "import torch\n"
    "MiB = 1024 * 1024\n"
    "kept = []\n"
    "for step in range(40):\n"
    "    scratch = torch.empty(8 * MiB)\n"
    "    kept.append(torch.empty(16 * MiB))\n"
    "    del scratch\n"
)


def test_a_module_level_list_is_named_as_the_holder_and_the_roles_add_up(tmp_path):
    write(tmp_path, "keep.py", KEEP)
    run = vramlens("run", "-o", tmp_path / "cap", "--memory-limit", "400MiB", "keep.py", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    data = json.loads(vramlens("analyze", "--json", tmp_path / "cap", cwd=tmp_path).stdout)
    assert data["cause"] == "retained_references"
    holder = data["holders"][0]
    assert holder["root"] == "__main__.kept" and holder["kind"] == "list"
    assert holder["tensors"] == holder["length"] and holder["bytes"] == holder["tensors"] * 16 * 2**20
    assert holder["appended_at"]["line"] == 6 and holder["appended_at"]["path"].endswith("keep.py")
    assert sum(role["bytes"] for role in data["roles"]) == data["memory"]["allocated"]
    assert any("Held by __main__.kept" in fact for fact in data["evidence"])
    advice = data["recommendations"]
    fix = next(r for r in advice if "__main__.kept" in r["action"])
    assert fix["actions"][0]["kind"] == "open_line" and fix["actions"][0]["arguments"]["line"] == 6
    # The census saw the kept tensors: none carries an autograd graph, so nothing about grad mode is advised.
    assert not any("inference_mode" in r["action"] for r in advice)


def test_no_census_gives_no_roles_and_says_nothing_it_cannot_know(tmp_path):
    write(tmp_path, "keep.py", KEEP)
    run = vramlens("run", "--no-census", "-o", tmp_path / "cap", "--memory-limit", "400MiB", "keep.py", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    data = json.loads(vramlens("analyze", "--json", tmp_path / "cap", cwd=tmp_path).stdout)
    assert data["roles"] == [] and data["holders"] == []
    assert data["cause"] == "retained_references"
